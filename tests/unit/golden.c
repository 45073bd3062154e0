// SPDX-License-Identifier: MIT
#include "golden.h"

#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *xrxe_golden_dir(void)
{
	const char *dir = getenv("XRXE_GOLDEN_DIR");

	return dir && *dir ? dir : "tests/golden";
}

int xrxe_golden_load(const char *file, struct xrxe_golden *g)
{
	char errbuf[PCAP_ERRBUF_SIZE], path[4096];
	struct pcap_pkthdr *hdr;
	const u_char *data;
	size_t cap = 0;
	pcap_t *p;
	int rc;

	memset(g, 0, sizeof(*g));
	snprintf(path, sizeof(path), "%s/%s", xrxe_golden_dir(), file);
	p = pcap_open_offline(path, errbuf);
	if (!p) {
		fprintf(stderr, "golden: %s: %s\n", path, errbuf);
		return -ENOENT;
	}
	if (pcap_datalink(p) != DLT_EN10MB) {
		fprintf(stderr, "golden: %s: not Ethernet\n", path);
		pcap_close(p);
		return -EINVAL;
	}
	while ((rc = pcap_next_ex(p, &hdr, &data)) == 1) {
		if (hdr->caplen != hdr->len) {
			fprintf(stderr, "golden: %s: frame %zu truncated by the capture\n", path,
				g->count + 1);
			rc = -EINVAL;
			break;
		}
		if (g->count == cap) {
			struct xrxe_golden_frame *n;

			cap = cap ? cap * 2 : 256;
			n = realloc(g->frames, cap * sizeof(*n));
			if (!n) {
				rc = -ENOMEM;
				break;
			}
			g->frames = n;
		}
		g->frames[g->count].data = xrxe_test_dup(data, hdr->caplen);
		g->frames[g->count].len = hdr->caplen;
		g->count++;
	}
	pcap_close(p);
	if (rc != PCAP_ERROR_BREAK) {
		if (rc == PCAP_ERROR)
			fprintf(stderr, "golden: %s: read error\n", path);
		xrxe_golden_free(g);
		return rc < 0 ? rc : -EIO;
	}
	return 0;
}

void xrxe_golden_free(struct xrxe_golden *g)
{
	for (size_t i = 0; i < g->count; i++)
		free(g->frames[i].data);
	free(g->frames);
	memset(g, 0, sizeof(*g));
}

uint8_t *xrxe_test_dup(const void *src, size_t len)
{
	uint8_t *p = malloc(len ? len : 1);

	if (!p)
		abort();
	if (len)
		memcpy(p, src, len);
	return p;
}

size_t xrxe_test_unhex(const char *hex, uint8_t *out, size_t cap)
{
	size_t n = 0;
	int hi = -1;

	for (; *hex; hex++) {
		int v;

		if (*hex >= '0' && *hex <= '9')
			v = *hex - '0';
		else if (*hex >= 'a' && *hex <= 'f')
			v = *hex - 'a' + 10;
		else if (*hex >= 'A' && *hex <= 'F')
			v = *hex - 'A' + 10;
		else
			continue;
		if (hi < 0) {
			hi = v;
		} else {
			if (n < cap)
				out[n] = (uint8_t)(hi << 4 | v);
			n++;
			hi = -1;
		}
	}
	return n;
}

uint64_t xrxe_test_rand(uint64_t *state)
{
	/* splitmix64 */
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
