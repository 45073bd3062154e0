// SPDX-License-Identifier: MIT
/*
 * roce_pcap_check: verify every RoCEv2 frame of a capture with xrxe's own
 * parser, ICRC included. Wireshark's InfiniBand dissector shows the ICRC but
 * does not check it (tshark 4.0 has no ICRC status field), so the interop
 * test needs this second, independent look at frames from both peers.
 *
 *     roce_pcap_check FILE.pcap[ng]
 *
 * Prints one line per source address: frames, RoCEv2 frames, ICRC failures,
 * other parse failures (with the first failing frame numbers), and a total.
 * Frames that are not UDP to port 4791 (ARP, ND, the TCP side channel) are
 * counted and skipped. Exit status: 0 if every RoCEv2 frame parsed and its
 * ICRC verified, 1 if not, 2 on usage or I/O errors.
 */
#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "xrxe/wire.h"

#define MAX_SOURCES 16

struct source {
	char addr[INET6_ADDRSTRLEN];
	unsigned long roce, icrc_bad, parse_bad;
	unsigned long first_bad; /* frame number, 1-based; 0 = none */
};

static struct source sources[MAX_SOURCES];
static unsigned nsources;

/* The source IP of a frame xrxe's parser accepted up to the IP header, as text. */
static struct source *source_of(const struct xrxe_pkt *pkt)
{
	const uint8_t *ip = pkt->frag[0].data + pkt->l3_off;
	char addr[INET6_ADDRSTRLEN];

	if (pkt->ip_version == 4)
		inet_ntop(AF_INET, ip + 12, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, ip + 8, addr, sizeof(addr));
	for (unsigned i = 0; i < nsources; i++)
		if (!strcmp(sources[i].addr, addr))
			return &sources[i];
	if (nsources == MAX_SOURCES)
		return &sources[MAX_SOURCES - 1]; /* lumped together, still counted */
	snprintf(sources[nsources].addr, sizeof(sources[nsources].addr), "%s", addr);
	return &sources[nsources++];
}

int main(int argc, char **argv)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *hdr;
	const u_char *data;
	unsigned long frames = 0, other = 0, truncated = 0, roce = 0, bad = 0;
	pcap_t *p;
	int rc;

	if (argc != 2) {
		fprintf(stderr, "usage: roce_pcap_check FILE.pcap\n");
		return 2;
	}
	p = pcap_open_offline(argv[1], errbuf);
	if (!p) {
		fprintf(stderr, "roce_pcap_check: %s\n", errbuf);
		return 2;
	}
	if (pcap_datalink(p) != DLT_EN10MB) {
		fprintf(stderr, "roce_pcap_check: %s is not an Ethernet capture\n", argv[1]);
		return 2;
	}
	while ((rc = pcap_next_ex(p, &hdr, &data)) == 1) {
		struct xrxe_pkt pkt;
		struct source *s;
		int err;

		frames++;
		if (hdr->caplen < hdr->len) {
			truncated++; /* snaplen cut it: the ICRC is not there to check */
			continue;
		}
		err = xrxe_parse(data, hdr->caplen, 0, &pkt);
		/* Not RoCEv2 at all: the side channel, ARP, neighbour discovery. */
		if (err == XRXE_PARSE_NOT_IP || err == XRXE_PARSE_NOT_UDP || err == XRXE_PARSE_NOT_ROCEV2 ||
		    (err == XRXE_PARSE_TRUNCATED && hdr->caplen < 42)) {
			other++;
			continue;
		}
		if (err && pkt.l3_off == 0) {
			/* Failed before the IP header was located: no source to name. */
			printf("frame %lu: %s\n", frames, xrxe_parse_strerror(err));
			bad++;
			continue;
		}
		roce++;
		s = source_of(&pkt);
		s->roce++;
		if (err == XRXE_PARSE_ICRC_MISMATCH)
			s->icrc_bad++;
		else if (err)
			s->parse_bad++;
		if (err) {
			bad++;
			if (!s->first_bad)
				s->first_bad = frames;
			if (s->icrc_bad + s->parse_bad <= 5)
				printf("frame %lu from %s: %s\n", frames, s->addr, xrxe_parse_strerror(err));
		}
	}
	if (rc == PCAP_ERROR) {
		fprintf(stderr, "roce_pcap_check: %s\n", pcap_geterr(p));
		pcap_close(p);
		return 2;
	}
	pcap_close(p);
	for (unsigned i = 0; i < nsources; i++)
		printf("source %s: %lu RoCEv2 frames, %lu ICRC errors, %lu malformed\n", sources[i].addr,
		       sources[i].roce, sources[i].icrc_bad, sources[i].parse_bad);
	printf("total: %lu frames, %lu RoCEv2, %lu other, %lu truncated by snaplen, %lu bad\n", frames,
	       roce, other, truncated, bad);
	return bad || truncated ? 1 : 0;
}
