/* SPDX-License-Identifier: MIT */
/*
 * Leveled logging to stderr for the daemon and the tools. The level comes from
 * XRXE_LOG (error, warn, info, debug); the default is info.
 */
#ifndef XRXE_UTIL_LOG_H
#define XRXE_UTIL_LOG_H

enum xrxe_log_level {
	XRXE_LOG_ERROR,
	XRXE_LOG_WARN,
	XRXE_LOG_INFO,
	XRXE_LOG_DEBUG,
};

/* Program name printed before every message ("xrxe", "xrxed"). */
void xrxe_log_init(const char *progname);
void xrxe_log_set_level(enum xrxe_log_level level);
enum xrxe_log_level xrxe_log_get_level(void);
void xrxe_log(enum xrxe_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#define xrxe_err(...) xrxe_log(XRXE_LOG_ERROR, __VA_ARGS__)
#define xrxe_warn(...) xrxe_log(XRXE_LOG_WARN, __VA_ARGS__)
#define xrxe_info(...) xrxe_log(XRXE_LOG_INFO, __VA_ARGS__)
#define xrxe_dbg(...) xrxe_log(XRXE_LOG_DEBUG, __VA_ARGS__)

/* Rate-limited logging for whatever a client or the network can trigger:
 * each call site prints at most XRXE_LOG_RL_BURST messages per
 * XRXE_LOG_RL_WINDOW_S seconds, then one line saying how many it
 * suppressed when its next window opens. */
#define XRXE_LOG_RL_BURST 10
#define XRXE_LOG_RL_WINDOW_S 10
struct xrxe_log_rl {
	long window; /* CLOCK_MONOTONIC seconds / XRXE_LOG_RL_WINDOW_S */
	unsigned n, suppressed;
};
/* true: print this message (level: the message's, for the suppressed line) */
int xrxe_log_rl_allow(struct xrxe_log_rl *rl, enum xrxe_log_level level);
#define xrxe_log_rl(level, ...)                                                                \
	do {                                                                                   \
		static struct xrxe_log_rl xrxe_rl_;                                             \
		if ((level) <= xrxe_log_get_level() && xrxe_log_rl_allow(&xrxe_rl_, (level)))  \
			xrxe_log((level), __VA_ARGS__);                                        \
	} while (0)
#define xrxe_warn_rl(...) xrxe_log_rl(XRXE_LOG_WARN, __VA_ARGS__)
#define xrxe_info_rl(...) xrxe_log_rl(XRXE_LOG_INFO, __VA_ARGS__)

#endif /* XRXE_UTIL_LOG_H */
