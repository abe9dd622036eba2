/*
 * closeout.c: a failed write to standard output is an error, also at
 * exit; and tfs_die(), the tools' one way to end on an error.
 *
 * printf() into a full file system or a broken device does not fail at
 * the printf(): the bytes wait in stdio's buffer until exit() flushes
 * them, after the program has chosen its exit status.  So
 * "tensorfs-fsck IMG > report" on a full disk would exit 0 with an
 * empty report.  As coreutils do (gnulib's close_stdout), an atexit
 * handler flushes and closes stdout and turns a failure into a message
 * and a non-zero status.  A closed pipe is not this case: SIGPIPE ends
 * the program first, as it ends cat.
 *
 * The handler exits with _exit(): it runs inside exit(), which must not
 * be called again, and everything else has been flushed by then or is
 * stderr, which is unbuffered.
 */
#include "closeout.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *closeout_prog = "";
static int closeout_code = 1;
static int closeout_quiet;

static void closeout(void)
{
	int pending = __fpending(stdout) != 0;
	int failed = ferror(stdout) != 0;
	int e;

	errno = 0;
	if (fclose(stdout) != 0) {
		e = errno;
		/* stdout closed from the start (">&-"), never written */
		if (!failed && !pending && e == EBADF)
			return;
		failed = 1;
	} else {
		e = 0;
	}
	if (!failed)
		return;
	if (!closeout_quiet)
		fprintf(stderr, "%s: cannot write the output%s%s\n",
			closeout_prog, e ? ": " : "", e ? strerror(e) : "");
	_exit(closeout_code);
}

void tfs_closeout(const char *prog, int code)
{
	closeout_prog = prog;
	closeout_code = code;
	atexit(closeout);
}

void tfs_closeout_said(void)
{
	closeout_quiet = 1;
}

void tfs_die(const char *prog, int code, int usage, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (usage)
		fprintf(stderr, "Try '%s --help' for more information.\n",
			prog);
	exit(code);
}
