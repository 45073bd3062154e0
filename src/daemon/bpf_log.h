/* SPDX-License-Identifier: MIT */
/*
 * libbpf's messages, folded into our one-line errors (bpf_log.c). Shared by
 * the steering loader (steer.c) and xrxe-impair's tc loader.
 */
#ifndef XRXE_DAEMON_BPF_LOG_H
#define XRXE_DAEMON_BPF_LOG_H

/* Bracket a call into libbpf that reports its own failure: installs the
 * print hook, sends libbpf's warnings to the debug level and forgets the
 * previous extack. Nests. */
void xrxe_bpf_quiet_begin(void);
void xrxe_bpf_quiet_end(void);

/* Forget the kernel's last extack text (before a call whose own extack, if
 * any, is to be reported). */
void xrxe_bpf_extack_clear(void);

/* " (kernel: TEXT)" when a call since the last clear came back with the
 * kernel's extack text ("Kernel error message: TEXT"), else "". Valid until
 * the next call into libbpf. */
const char *xrxe_bpf_extack_suffix(void);

#endif /* XRXE_DAEMON_BPF_LOG_H */
