/*
 * log.c: part of the FUSE daemon: where its messages go (log.h has the
 * rules).  The destination is picked once, before the mount, while the
 * terminal can still show an error: syslog when /dev/log accepts a
 * connection (log=syslog when it does not is an error), else a file,
 * whose directory the default path creates.  Every later line is
 * formatted into a buffer and written with one write(), so lines from
 * several threads never mix.
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#define SYSLOG_SOCKET "/dev/log"

static int to_stderr = 1; /* the terminal is attached, or -f */
static int to_syslog;
static int log_fd = -1; /* the log file, or -1 */
static char where[PATH_MAX] = "stderr";

/* Does the syslog socket accept a connection (datagram, as syslog(3)
 * tries first, or stream)? */
static int syslog_alive(void)
{
	static const int types[] = { SOCK_DGRAM, SOCK_STREAM };
	struct sockaddr_un a = { .sun_family = AF_UNIX };

	snprintf(a.sun_path, sizeof(a.sun_path), "%s", SYSLOG_SOCKET);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		int fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		int ok;

		if (fd < 0)
			continue;
		ok = connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0;
		close(fd);
		if (ok)
			return 1;
	}
	return 0;
}

int tfs_log_default_path(const char *dev, char *buf, size_t len)
{
	const char *base = strrchr(dev, '/'), *state, *home;
	int n;

	base = base ? base + 1 : dev;
	if (geteuid() == 0) {
		n = snprintf(buf, len, "/var/log/tensorfs/%s.log", base);
	} else {
		state = getenv("XDG_STATE_HOME");
		home = getenv("HOME");
		if (state && *state == '/')
			n = snprintf(buf, len, "%s/tensorfs/%s.log", state,
				     base);
		else if (home && *home)
			n = snprintf(buf, len,
				     "%s/.local/state/tensorfs/%s.log", home,
				     base);
		else
			return -ENOENT;
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* mkdir -p of path's directory, the last level with mode. */
static int make_parent(const char *path, mode_t mode)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	for (char *p = dir + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(dir, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int open_file(const char *path, char *err, size_t errlen)
{
	log_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
	if (log_fd < 0) {
		int rc = -errno;

		snprintf(err, errlen,
			 "cannot open the log file '%s': %s; "
			 "choose another with -o log=FILE (or log=syslog)",
			 path, strerror(-rc));
		return rc;
	}
	snprintf(where, sizeof(where), "%s", path);
	return 0;
}

int tfs_log_setup(const char *setting, const char *dev, int foreground,
		  char *err, size_t errlen)
{
	char path[PATH_MAX], cwd[PATH_MAX];
	int rc;

	if (!strcmp(setting, "syslog") && !syslog_alive()) {
		/* else every message would vanish without a word */
		snprintf(err, errlen,
			 "log=syslog, but %s does not accept "
			 "messages (no syslog daemon running?); start one, or "
			 "log to a file with -o log=FILE",
			 SYSLOG_SOCKET);
		return -ENOENT;
	}
	if (!strcmp(setting, "syslog") ||
	    (!*setting && !foreground && syslog_alive())) {
		to_syslog = 1;
		snprintf(where, sizeof(where), "syslog");
		openlog("tensorfs", LOG_PID, LOG_DAEMON);
		return 0;
	}
	if (*setting) {
		size_t lc = 0, ls = strlen(setting);

		if (*setting != '/' && getcwd(cwd, sizeof(cwd)))
			lc = strlen(cwd);
		if (lc + 1 + ls >= sizeof(path)) {
			snprintf(err, errlen,
				 "log file name too long; choose "
				 "a shorter one with -o log=FILE");
			return -ENAMETOOLONG;
		}
		if (lc) {
			memcpy(path, cwd, lc);
			path[lc++] = '/';
		}
		memcpy(path + lc, setting, ls + 1);
		return open_file(path, err, errlen);
	}
	if (foreground)
		return 0;
	rc = tfs_log_default_path(dev, path, sizeof(path));
	if (rc) {
		snprintf(err, errlen,
			 "no syslog (%s does not accept messages) "
			 "and no default log file (%s); choose one with "
			 "-o log=FILE",
			 SYSLOG_SOCKET,
			 rc == -ENOENT ? "HOME is not set" : strerror(-rc));
		return rc;
	}
	rc = make_parent(path, geteuid() == 0 ? 0755 : 0700);
	if (rc) {
		snprintf(err, errlen,
			 "no syslog (%s does not accept messages) "
			 "and cannot make the directory of the log file "
			 "'%s': %s; choose one with -o log=FILE",
			 SYSLOG_SOCKET, path, strerror(-rc));
		return rc;
	}
	return open_file(path, err, errlen);
}

const char *tfs_log_where(void)
{
	return where;
}

void tfs_log_detach(void)
{
	if (log_fd >= 0 || to_syslog)
		to_stderr = 0;
}

void tfs_log_v(int prio, const char *fmt, va_list ap)
{
	char line[2048], stamp[64];
	struct timespec ts;
	struct tm tm;
	int n, m;
	va_list cp;

	if (to_syslog) {
		va_copy(cp, ap);
		vsyslog(prio, fmt, cp);
		va_end(cp);
	}
	if (!to_stderr && log_fd < 0)
		return;
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line) - 1)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (to_stderr) {
		fputs("tensorfs: ", stderr);
		fwrite(line, 1, (size_t)n, stderr);
	}
	if (log_fd >= 0) {
		char out[sizeof(line) + 128];

		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", &tm);
		m = snprintf(out, sizeof(out), "%s tensorfs[%d]: %.*s", stamp,
			     (int)getpid(), n, line);
		if (m > 0 && write(log_fd, out, (size_t)m) < 0) {
			/* nowhere left to say so */
		}
	}
}
