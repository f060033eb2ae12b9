#ifndef ORGW_HARDEN_H
#define ORGW_HARDEN_H

/*
 * Turns core dumps off for this process: RLIMIT_CORE 0 (shown
 * in /proc/PID/limits) and prctl(PR_SET_DUMPABLE, 0), so a crash never
 * writes the upstream key to disk and no other process of the same user
 * can ptrace it or read /proc/PID/mem.  Called first thing in main() by
 * orgw.fcgi and orgw-score.  0, or -1 with errno set.
 */
int harden_no_dumps(void);

#endif
