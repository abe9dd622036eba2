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

#endif
