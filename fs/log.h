/*
 * log.h: part of the FUSE daemon: where its messages go.
 *
 * While the terminal is attached (before the daemon forks, and all along
 * with -f or -d) a message goes to stderr.  Daemonised, it goes to the
 * destination chosen at start-up: syslog when asked for ([mount] log =
 * syslog), or when nothing is asked for and /dev/log accepts a
 * connection; else a log file, the one asked for (log = FILE) or the
 * default one (tfs_log_default_path()).  A message written before the
 * fork goes to the terminal and to that destination, so a line the user
 * saw at mount is also in the log.  Lines in a file carry the time and
 * the daemon's pid.
 *
 * States: TERMINAL -> DETACHED [tfs_log_detach(), after fork];
 * tfs_log_setup() picks the destination first.  Thread safe after setup:
 * a line is one write() to a file opened O_APPEND.
 */
#ifndef TFS_LOG_H
#define TFS_LOG_H

#include <stdarg.h>
#include <stddef.h>

/*
 * The default log file for the device at dev: /var/log/tensorfs/NAME.log
 * for root, $XDG_STATE_HOME/tensorfs/NAME.log for other users
 * ($XDG_STATE_HOME defaults to ~/.local/state), NAME the device's base
 * name.  Into buf of len; 0, or -ENAMETOOLONG, -ENOENT (no home).
 */
int tfs_log_default_path(const char *dev, char *buf, size_t len);

/*
 * Choose where the daemon logs: setting is [mount] log ("" for the
 * default, "syslog", or a file path; a relative path is taken from the
 * current directory), dev the device, foreground for -f.  A file is
 * opened (and the default one's directory made) here, before the mount,
 * so a bad path is an error on the terminal: -errno and a sentence in
 * err.  In the foreground, the file or syslog, when one is asked for,
 * gets every line too.  Call once, before any thread starts.
 */
int tfs_log_setup(const char *setting, const char *dev, int foreground,
		  char *err, size_t errlen);

/* Where messages go once daemonised: "syslog", a file's path, or
 * "stderr" in the foreground.  Borrowed, valid until exit. */
const char *tfs_log_where(void);

/* The terminal is gone (after fuse_daemonize()): stop writing to stderr,
 * unless in the foreground. */
void tfs_log_detach(void);

/* Log one line with syslog priority prio (LOG_ERR, ...). */
void tfs_log_v(int prio, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#endif
