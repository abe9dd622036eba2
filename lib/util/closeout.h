/*
 * closeout.h: standard output that cannot be written is an error, also
 * when it is found out only at exit.
 */
#ifndef TFS_CLOSEOUT_H
#define TFS_CLOSEOUT_H

/*
 * Call once, first thing in main(): at exit, stdout is flushed and
 * closed, and if any write to it failed (a full disk, an I/O error) the
 * program says "PROG: cannot write the output: REASON" on stderr and
 * exits with code instead of the status it chose.  A stdout that was
 * closed before the program started and never written to is not an
 * error.
 */
void tfs_closeout(const char *prog, int code);

/* The program has already said that its output failed: at exit, exit
 * with code but do not say it again. */
void tfs_closeout_said(void);

/*
 * End the program with an error: stdout flushed first (what it printed
 * comes before the error on a terminal), "PROG: MESSAGE" on stderr,
 * with usage also "Try 'PROG --help' for more information.", then
 * exit(code), which tfs_closeout()'s check still runs in.
 */
void tfs_die(const char *prog, int code, int usage, const char *fmt, ...)
    __attribute__((format(printf, 4, 5), noreturn));

#endif
