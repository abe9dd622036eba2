/*
 * fuse_main.c: part of the FUSE daemon, the adapter between the kernel's
 * FUSE requests and lib/ calls.  This file holds main(): the command line,
 * the configuration (-c FILE.ini, settings in -o), the memory check,
 * opening the device, mounting, daemonising, logging and the session loop.
 * The request handlers are in fuse_ops.c.
 *
 * Start-up order matters: the device is opened and checked, and the
 * mount point validated, before anything is mounted, so every error is
 * printed on the terminal with a non-zero exit.  Then the FUSE session is
 * mounted, the process daemonises (unless -f) and only then are threads
 * started (fork keeps only the calling thread).  On SIGTERM, SIGINT or
 * an unmount (fusermount3 -u) the session loop ends and tfs_fs_close()
 * writes everything and a clean checkpoint before the process exits.
 *
 * main() reads as those steps: parse_cmdline, read_config,
 * resolve_operands, open_fs, mount_session, start_daemon, serve, then
 * unmount_session and close_fs.  With -o remount (mount -o remount,ro
 * runs us so) there is no second mount: remount() tells the running
 * daemon through an ioctl on its /.tensorfs and remounts the kernel's
 * side, then exits.
 */
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include <errno.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <syslog.h>
#include <unistd.h>

#include "closeout.h"
#include "config.h"
#include "daemon.h"
#include "fs.h"
#include "inval.h"
#include "log.h"
#include "memcheck.h"
#include "statedir.h"
#include "transport.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

/* ===== logging ===== */

/* Where it goes is log.c's business (log.h). */
void tfs_daemon_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tfs_log_v(prio, fmt, ap);
	va_end(ap);
}

static void log_fs(const char *msg)
{
	tfs_daemon_log(LOG_ERR, "%s", msg);
}

/* ===== command line ===== */

/*
 * Whether key=value in a -o list is one FUSE or mount(8) takes (libfuse
 * 3.14's mount and session options, the kernel's): these go to FUSE even
 * when one is near a setting's name.
 */
static int fuse_value_opt(const char *key)
{
	static const char *const known[] = {
		"fsname",
		"subtype",
		"max_read",
		"blksize",
		"context",
		"fscontext",
		"defcontext",
		"rootcontext",
		"user",
		"uid",
		"gid",
		"user_id",
		"group_id",
		"rootmode",
		"umask",
		"fd",
		"max_write",
		"max_readahead",
		"max_background",
		"congestion_threshold",
		"time_gran",
		"max_idle_threads",
		"comment",
		NULL,
	};

	if (!strncmp(key, "x-", 2))
		return 1;
	for (const char *const *k = known; *k; k++)
		if (!strcmp(key, *k))
			return 1;
	return 0;
}

/* A mount(8) option libfuse 3.14 does not take: atime_policy(),
 * parse_cmdline() or remount_atime() read it, FUSE never sees it. */
static int is_own_flag_opt(const char *tok)
{
	static const char *const own[] = {
		"relatime",	 "norelatime", "strictatime",
		"nostrictatime", "diratime",   "nodiratime",
		"norecovery",	 "noload",     NULL,
	};

	for (const char *const *o = own; *o; o++)
		if (!strcmp(tok, *o))
			return 1;
	return 0;
}

/*
 * The atime policy the -o list asks for (lib's TFS_ATIME_*).  FUSE
 * inodes are S_NOATIME in the kernel, which leaves atime to us.  As the
 * kernel reads these options: relatime unless noatime, strictatime over
 * both, and a read-only mount writes no atime at all.  atime, noatime,
 * ro and rw go on to FUSE as well (the mount shows them); libfuse 3.14
 * refuses the others, so they are ours only (is_own_flag_opt()); the
 * mount's own flags say strictatime through show_atime_flags().
 */
static int atime_policy(const char *opts)
{
	int noatime = 0, strict = 0, ro = 0;
	const char *p = opts;

	while (p && *p) {
		size_t n = strcspn(p, ",");

#define IS(word) (n == sizeof(word) - 1 && !strncmp(p, word, n))
		if (IS("noatime"))
			noatime = 1;
		else if (IS("atime"))
			noatime = 0;
		else if (IS("strictatime"))
			strict = 1;
		else if (IS("nostrictatime") || IS("relatime") ||
			 IS("norelatime"))
			strict = 0;
		else if (IS("ro"))
			ro = 1;
		else if (IS("rw"))
			ro = 0;
#undef IS
		p += n + (p[n] == ',');
	}
	if (ro)
		return TFS_ATIME_NOATIME;
	if (strict)
		return TFS_ATIME_STRICT;
	return noatime ? TFS_ATIME_NOATIME : TFS_ATIME_RELATIME;
}

/*
 * The atime policy a remount's -o list asks for, or -1 if it names none
 * (the policy stays, as the kernel keeps a mount's atime flags then).
 * The last atime option wins: mount(8) passes the mount's options as
 * /proc/mounts shows them (relatime or noatime, nothing for strictatime)
 * with the remount's own after them, e.g. rw,relatime,remount,noatime.
 * As the kernel: relatime unless noatime or strictatime; atime,
 * norelatime and nostrictatime mean relatime.  ro and rw do not count:
 * a read-only file system writes no atime whatever its policy.
 */
static int remount_atime(const char *opts)
{
	const char *p = opts;
	int atime = -1;

	while (p && *p) {
		size_t n = strcspn(p, ",");

#define IS(word) (n == sizeof(word) - 1 && !strncmp(p, word, n))
		if (IS("noatime"))
			atime = TFS_ATIME_NOATIME;
		else if (IS("strictatime"))
			atime = TFS_ATIME_STRICT;
		else if (IS("atime") || IS("relatime") || IS("norelatime") ||
			 IS("nostrictatime"))
			atime = TFS_ATIME_RELATIME;
#undef IS
		p += n + (p[n] == ',');
	}
	return atime;
}

/*
 * Take the settings (key=value with a known key) out of a -o list into
 * cfg and leave the FUSE options in *opts (NULL if none are left).  A
 * key=value that is neither a setting nor a FUSE option but near a
 * setting's name is a typo: an error naming the nearest setting, as the
 * INI parser gives, rather than libfuse's bare "unknown option".
 */
static int split_options(struct tfs_config *cfg, char **opts, char *err,
			 size_t errlen)
{
	char *rest = malloc(strlen(*opts) + 1), *tok, *save = NULL;
	size_t pos = 0;
	int rc = 0;

	if (!rest)
		return -ENOMEM;
	for (tok = strtok_r(*opts, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (is_own_flag_opt(tok))
			continue; /* read already, not FUSE's */
		/* discard and nodiscard, as ext4 takes them */
		if (!strcmp(tok, "discard") || !strcmp(tok, "nodiscard")) {
			rc = tfs_config_set(cfg, "discard",
					    *tok == 'n' ? "false" : "true", err,
					    errlen);
			continue;
		}
		if (eq) {
			*eq = '\0';
			if (tfs_config_is_key(tok) ||
			    (!fuse_value_opt(tok) && tfs_config_nearest(tok))) {
				rc = tfs_config_set(cfg, tok, eq + 1, err,
						    errlen);
				continue;
			}
			*eq = '=';
		}
		pos += (size_t)sprintf(rest + pos, "%s%s", pos ? "," : "", tok);
	}
	free(*opts);
	if (rc || pos == 0) {
		free(rest);
		*opts = NULL;
		return rc;
	}
	*opts = rest;
	return 0;
}

static void usage(FILE *f)
{
	fputs(
	    "Usage: tensorfs [-c FILE.ini] [-o OPT[,OPT...]] [-f] [-d] DEVICE MOUNTPOINT\n"
	    "\n"
	    "Mount the tensorfs file system on DEVICE (an NVMe block device or an image\n"
	    "file made with mkfs.tensorfs; a set of several as DEV1:DEV2:..., in any\n"
	    "order) at MOUNTPOINT, e.g. /local_nvme.  Tensors are offloaded by writing\n"
	    "files there; point DeepSpeed's nvme_path at it.\n"
	    "\n"
	    "Options:\n"
	    "  -c FILE.ini  read settings from FILE.ini (see conf/tensorfs.ini and\n"
	    "               tensorfs.ini(5)); a bad key or value stops the mount.\n"
	    "               Default: " TFS_CONFIG_PATH " if it exists\n"
	    "               (TENSORFS_CONFIG in the environment names another)\n"
	    "  -o OPT,...   mount options: a setting as key=value or section.key=value\n"
	    "               overrides the file (-o commit_interval_ms=1000); others go\n"
	    "               to FUSE: allow_other (the default when run as root), ro, and\n"
	    "               the rest of mount.fuse3(8).  Reads update atime as relatime\n"
	    "               (the default), noatime or strictatime say, and listings\n"
	    "               a directory's, unless nodiratime.  ro opens DEVICE\n"
	    "               read-only; ro,norecovery mounts an uncleanly unmounted\n"
	    "               DEVICE as its last checkpoint is, without replaying the\n"
	    "               journal.  remount,ro and remount,rw (mount -o remount,ro\n"
	    "               MOUNTPOINT) switch the running mount, which writes\n"
	    "               everything back first; remount,noatime (or strictatime,\n"
	    "               relatime, nodiratime, diratime) changes its atime\n"
	    "               policy; see tensorfs(8).\n"
	    "               discard: discard freed blocks (or run fstrim\n"
	    "               MOUNTPOINT).  log=FILE or log=syslog: where the daemon\n"
	    "               logs; by default syslog if /dev/log accepts messages,\n"
	    "               else /var/log/tensorfs/DEVICE.log (root) or\n"
	    "               $XDG_STATE_HOME/tensorfs/DEVICE.log\n"
	    "  --print-config  print the effective configuration (defaults, -c, -o) as\n"
	    "               an INI file and exit\n"
	    "  -f           stay in the foreground; log to stderr (and to the log\n"
	    "               setting's file or syslog, if set)\n"
	    "  -d           debug: print every FUSE request (implies -f)\n"
	    "  -h, --help   print this help and exit\n"
	    "  -V, --version  print the version and exit\n"
	    "\n"
	    "Unmount with 'fusermount3 -u MOUNTPOINT' (or umount as root), or send the\n"
	    "daemon SIGTERM: both write all data and leave a clean file system; umount\n"
	    "returns before the daemon has written it (it exits when done), remount,ro\n"
	    "after.\n"
	    "\n"
	    "Exit status: 0 after a clean unmount, 1 on an error, a bad configuration\n"
	    "file or value included (the message says what to do), 2 on a usage error.\n",
	    f);
}

/*
 * Each step of start-up returns GO_ON, or the status main() exits with,
 * having said why: 0 after --help or --version, 1 for an error (a bad
 * configuration file or value included), 2 for a usage error (a bad
 * option, operand or -o setting).
 */
#define GO_ON (-1)

/* What the command line asked for, and the paths it names resolved. */
struct cmdline {
	const char *conf; /* -c FILE.ini, or NULL */
	char *fuseopts;	  /* the -o lists joined by ','; malloc'd */
	int debug;	  /* -d */
	int foreground;	  /* -f or -d */
	int print_config; /* --print-config */
	char **operands;  /* DEVICE MOUNTPOINT, as given */
	int noperands;
	int ro;		    /* -o ro (the last of ro and rw) */
	int remount;	    /* -o remount: tell the running mount */
	int remount_atime;  /* its TFS_ATIME_*, or -1: keep the policy */
	int nodiratime;	    /* -o nodiratime 1, diratime 0, neither -1 */
	int norecovery;	    /* -o norecovery (or noload): ro only */
	char dev[PATH_MAX]; /* realpath of DEVICE */
	char mnt[PATH_MAX]; /* realpath of MOUNTPOINT */
};

/* Append a -o list to cl->fuseopts.  0, or -ENOMEM. */
static int add_fuseopts(struct cmdline *cl, const char *opts)
{
	char *n;

	if (!cl->fuseopts) {
		cl->fuseopts = strdup(opts);
		return 0;
	}
	n = malloc(strlen(cl->fuseopts) + strlen(opts) + 2);
	if (!n)
		return -ENOMEM;
	sprintf(n, "%s,%s", cl->fuseopts, opts);
	free(cl->fuseopts);
	cl->fuseopts = n;
	return 0;
}

/*
 * The mount(8) flags of the -o list that tensorfs acts on: ro and rw
 * (the last wins; both stay for FUSE, which mounts with MS_RDONLY or
 * not) and remount, which is taken out (it is not a FUSE option: the
 * running mount is told instead, see remount()).
 */
static void mount_flags(struct cmdline *cl)
{
	char *o = cl->fuseopts, *w = o, *tok = o;

	if (!o)
		return;
	while (tok) {
		char *comma = strchr(tok, ',');
		size_t len = comma ? (size_t)(comma - tok) : strlen(tok);

		if (len == 2 && !strncmp(tok, "ro", 2))
			cl->ro = 1;
		else if (len == 2 && !strncmp(tok, "rw", 2))
			cl->ro = 0;
		if (len == 7 && !strncmp(tok, "remount", 7)) {
			cl->remount = 1;
		} else if (len) {
			if (w != o)
				*w++ = ',';
			memmove(w, tok, len);
			w += len;
		}
		tok = comma ? comma + 1 : NULL;
	}
	*w = '\0';
	if (w == o) {
		free(cl->fuseopts);
		cl->fuseopts = NULL;
	}
}

/*
 * nodiratime, diratime (the last wins) and norecovery (noload is ext4's
 * other name for it) in the -o list; split_options() leaves them out
 * of what FUSE gets.  As on ext4: nodiratime stops listings from moving
 * a directory's atime, which otherwise moves as the atime policy says;
 * norecovery mounts read-only without replaying the journal.
 */
static void flag_options(struct cmdline *cl)
{
	const char *p = cl->fuseopts;

	cl->nodiratime = -1;
	while (p && *p) {
		size_t n = strcspn(p, ",");

#define IS(word) (n == sizeof(word) - 1 && !strncmp(p, word, n))
		if (IS("nodiratime"))
			cl->nodiratime = 1;
		else if (IS("diratime"))
			cl->nodiratime = 0;
		else if (IS("norecovery") || IS("noload"))
			cl->norecovery = 1;
#undef IS
		p += n + (p[n] == ',');
	}
}

/* The options; -h and -V are answered here. */
static int parse_cmdline(int argc, char **argv, struct cmdline *cl)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "print-config", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "c:o:fdhV", longopts, NULL)) !=
	       -1) {
		switch (c) {
		case 'c':
			cl->conf = optarg;
			break;
		case 'o':
			if (add_fuseopts(cl, optarg))
				return 1;
			break;
		case 'f':
			cl->foreground = 1;
			break;
		case 'd':
			cl->debug = 1;
			cl->foreground = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'P':
			cl->print_config = 1;
			break;
		case 'V':
			printf("tensorfs %s (libfuse %d)\n", TFS_VERSION_STRING,
			       fuse_version());
#ifdef TFS_TEST_HOOKS
			/* test-writeback.sh looks for this line */
			printf("built with test hooks (fault injection); "
			       "not for production use\n");
#endif
			return 0;
		default:
			fputs("Try 'tensorfs --help' for more information.\n",
			      stderr);
			return 2;
		}
	}
	cl->operands = argv + optind;
	cl->noperands = argc - optind;
	flag_options(cl);
	return GO_ON;
}

/*
 * The configuration file read without -c, if it exists: TENSORFS_CONFIG
 * from the environment, else TFS_CONFIG_PATH (the build's; by default
 * /etc/tensorfs/tensorfs.ini).  NULL if there is none.
 */
static const char *default_config(void)
{
	const char *p = getenv("TENSORFS_CONFIG");

	if (!p || !*p)
		p = TFS_CONFIG_PATH;
	return access(p, F_OK) == 0 ? p : NULL;
}

/*
 * The effective configuration: defaults, then -c FILE.ini (or the
 * default file), then the settings in -o (taken out of cl->fuseopts).
 */
static int read_config(struct cmdline *cl, struct tfs_daemon *dm)
{
	char err[512] = "";

	tfs_config_defaults(&dm->cfg);
	if (!cl->conf)
		cl->conf = default_config();
	/* a file that cannot be read or holds a bad value is bad input
	 * (1); a setting in -o that cannot be parsed is a bad command line
	 * (2); values that contradict each other, wherever they came
	 * from, are refused (1), the message naming where each came from */
	if (cl->conf && tfs_config_load(&dm->cfg, cl->conf, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 1;
	}
	dm->atime = atime_policy(cl->fuseopts);
	cl->remount_atime = remount_atime(cl->fuseopts);
	if (cl->fuseopts &&
	    split_options(&dm->cfg, &cl->fuseopts, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: -o %s\n", err);
		return 2;
	}
	mount_flags(cl);
	if (dm->cfg.warnings[0])
		fprintf(stderr, "tensorfs: %s", dm->cfg.warnings);
	if (tfs_config_validate(&dm->cfg, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 1;
	}
	dm->attr_timeout = (double)dm->cfg.mount_attr_timeout_ms / 1000.0;
	return GO_ON;
}

/*
 * DEV1:DEV2:... (a set, lib/set.h): each member's real path, joined
 * with ':' again into out (len bytes), in the order given.  Returns out,
 * or NULL with errno (that of the member that has no real path,
 * ENAMETOOLONG if they do not fit) and that member's name in out.
 */
static char *set_realpath(const char *spec, char *out, size_t len)
{
	char one[PATH_MAX], *copy, *p, *c;
	size_t n = 0;

	if (!strchr(spec, ':'))
		return NULL;
	copy = strdup(spec);
	if (!copy)
		return NULL;
	for (p = copy; p; p = c) {
		c = strchr(p, ':');
		if (c)
			*c++ = '\0';
		if (!realpath(p, one) || n + strlen(one) + 2 > len) {
			int e = errno;

			if (realpath(p, one))
				e = ENAMETOOLONG;
			/* out names the member at fault */
			snprintf(out, len, "%s", p);
			free(copy);
			errno = e;
			return NULL;
		}
		n += (size_t)snprintf(out + n, len - n, "%s%s", n ? ":" : "",
				      one);
	}
	free(copy);
	return out;
}

/* DEVICE and MOUNTPOINT: two of them, the mount point a directory. */
static int resolve_operands(struct cmdline *cl)
{
	const char *mnt;
	struct stat st;

	if (cl->noperands != 2) {
		fprintf(stderr,
			"tensorfs: %s\n"
			"Usage: tensorfs [-c FILE.ini] [-o OPT,...] [-f] [-d] "
			"DEVICE MOUNTPOINT\n"
			"Try 'tensorfs --help' for more information.\n",
			cl->noperands < 2 ? "missing DEVICE or MOUNTPOINT"
					  : "too many arguments");
		return 2;
	}
	if (!realpath(cl->operands[0], cl->dev) &&
	    (cl->dev[0] = '\0',
	     !set_realpath(cl->operands[0], cl->dev, sizeof(cl->dev)))) {
		/* a remount tells the running mount: its device is not used */
		if (cl->remount) {
			snprintf(cl->dev, sizeof(cl->dev), "%s",
				 cl->operands[0]);
		} else if (strchr(cl->operands[0], ':') &&
			   (strstr(cl->operands[0], "::") ||
			    cl->operands[0][0] == ':' ||
			    cl->operands[0][strlen(cl->operands[0]) - 1] ==
				':')) {
			fprintf(stderr,
				"tensorfs: device '%s': an empty device name; "
				"join the members with single ':' "
				"(DEV1:DEV2:...)\n",
				cl->operands[0]);
			return 1;
		} else if (cl->dev[0]) {
			fprintf(stderr, "tensorfs: device '%s' of '%s': %s\n",
				cl->dev, cl->operands[0], strerror(errno));
			return 1;
		} else {
			fprintf(stderr, "tensorfs: device '%s': %s\n",
				cl->operands[0], strerror(errno));
			return 1;
		}
	}
	mnt = cl->operands[1];
	if (stat(mnt, &st) < 0) {
		fprintf(stderr,
			"tensorfs: mount point '%s' does not exist; "
			"create it with mkdir -p %s\n",
			mnt, mnt);
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr,
			"tensorfs: mount point '%s' is not a "
			"directory\n",
			mnt);
		return 1;
	}
	if (!realpath(mnt, cl->mnt)) {
		fprintf(stderr, "tensorfs: mount point '%s': %s\n", mnt,
			strerror(errno));
		return 1;
	}
	return GO_ON;
}

/* ===== remount ===== */

/* Whether the last mount on mnt (mountinfo's mount point, unescaped
 * only as far as tune_bdi() does) is a tensorfs one: fuse.tensorfs. */
static int is_tensorfs_mount(const char *mnt)
{
	char line[8192];
	FILE *f = fopen("/proc/self/mountinfo", "r");
	int found = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char m[4096], type[256];
		const char *sep = strstr(line, " - ");

		/* id parent major:minor root mountpoint ... - type source */
		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", m) == 1 &&
		    sscanf(sep + 3, "%255s", type) == 1 && !strcmp(m, mnt))
			found = !strcmp(type, "fuse.tensorfs");
	}
	fclose(f);
	return found;
}

/*
 * The flags of the mount(2) call of a remount: MS_REMOUNT, MS_RDONLY for
 * ro, and the mount's per-mount flags as they are (a remount clears the
 * ones it is not given) or as the -o list changes them (mount -o
 * remount,ro,noexec).
 */
static unsigned long remount_flags(const struct cmdline *cl,
				   const struct statvfs *sv)
{
	static const struct {
		const char *name;
		unsigned long set, clear;
	} opt[] = {
		{ "nosuid", MS_NOSUID, 0 },
		{ "suid", 0, MS_NOSUID },
		{ "nodev", MS_NODEV, 0 },
		{ "dev", 0, MS_NODEV },
		{ "noexec", MS_NOEXEC, 0 },
		{ "exec", 0, MS_NOEXEC },
		{ "nodiratime", MS_NODIRATIME, 0 },
		{ "diratime", 0, MS_NODIRATIME },
	};
	unsigned long fl = MS_REMOUNT | (cl->ro ? MS_RDONLY : 0);
	char *opts = cl->fuseopts ? strdup(cl->fuseopts) : NULL, *save = NULL;

	if (sv->f_flag & ST_NOSUID)
		fl |= MS_NOSUID;
	if (sv->f_flag & ST_NODEV)
		fl |= MS_NODEV;
	if (sv->f_flag & ST_NOEXEC)
		fl |= MS_NOEXEC;
	if (sv->f_flag & ST_NOATIME)
		fl |= MS_NOATIME;
	if (sv->f_flag & ST_NODIRATIME)
		fl |= MS_NODIRATIME;
	if (sv->f_flag & ST_RELATIME)
		fl |= MS_RELATIME;
	for (char *t = opts ? strtok_r(opts, ",", &save) : NULL; t;
	     t = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
			if (!strcmp(t, opt[i].name))
				fl = (fl & ~opt[i].clear) | opt[i].set;
	free(opts);
	/* nodiratime and diratime never reach the list above (FUSE does
	 * not take them): flag_options() read them */
	if (cl->nodiratime >= 0)
		fl = cl->nodiratime ? fl | MS_NODIRATIME : fl & ~MS_NODIRATIME;
	/* the atime options as the daemon takes them (remount_atime()) */
	if (cl->remount_atime >= 0) {
		fl &= ~(MS_NOATIME | MS_RELATIME | MS_STRICTATIME);
		fl |= cl->remount_atime == TFS_ATIME_NOATIME  ? MS_NOATIME
		      : cl->remount_atime == TFS_ATIME_STRICT ? MS_STRICTATIME
							      : MS_RELATIME;
	}
	return fl;
}

/*
 * -o remount (mount -o remount,ro|rw MOUNTPOINT runs us so, through
 * mount.fuse3): no second daemon, the running one is told.  To ro: the
 * kernel's mount first, which refuses (EBUSY) while a file is open for
 * writing and writes mmap'd pages back, so no change reaches the daemon
 * after it; then the daemon writes everything back and marks the device
 * clean (TFS_IOC_SET_RO) before this returns.  To rw: the daemon first,
 * which refuses if it opened the device read-only, then the kernel.
 * Either way a failed second step undoes the first.  Then an atime
 * option (remount_atime()) goes to the daemon (TFS_IOC_SET_ATIME), which
 * updates atime itself: the kernel's flags alone change nothing there.
 */
static int remount(const struct cmdline *cl)
{
	const char *how = cl->ro ? "ro" : "rw";
	char dir[PATH_MAX + 16];
	struct statvfs sv;
	unsigned long fl;
	int fd, rc = 1;

	if (!is_tensorfs_mount(cl->mnt)) {
		fprintf(stderr,
			"tensorfs: remount,%s: '%s' is not a tensorfs "
			"mount point; mount it first\n",
			how, cl->mnt);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/%s", cl->mnt, TFS_STATEDIR_NAME);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstatvfs(fd, &sv) < 0) {
		fprintf(stderr,
			"tensorfs: remount,%s: cannot open '%s': %s "
			"(is its daemon still running?)\n",
			how, dir, strerror(errno));
		goto out;
	}
	fl = remount_flags(cl, &sv);
	if (cl->ro) {
		if (mount(cl->dev, cl->mnt, NULL, fl, NULL) < 0) {
			fprintf(
			    stderr, "tensorfs: remount,ro of '%s': %s%s\n",
			    cl->mnt, strerror(errno),
			    errno == EBUSY
				? "; files are open for writing there: close "
				  "them (fuser -vm MOUNTPOINT lists them) and "
				  "try again"
				: "");
			goto out;
		}
		if (ioctl(fd, TFS_IOC_SET_RO) < 0) {
			fprintf(stderr,
				"tensorfs: remount,ro of '%s': the "
				"daemon could not write everything back: %s; "
				"its log says more, and the mount stays "
				"read-write\n",
				cl->mnt, strerror(errno));
			(void)mount(cl->dev, cl->mnt, NULL, fl & ~MS_RDONLY,
				    NULL);
			goto out;
		}
	} else {
		if (ioctl(fd, TFS_IOC_SET_RW) < 0) {
			fprintf(
			    stderr, "tensorfs: remount,rw of '%s': %s%s\n",
			    cl->mnt, strerror(errno),
			    errno == EROFS
				? "; it was mounted with -o ro, which opens the "
				  "device read-only: unmount it and mount it "
				  "without ro"
				: "; its log says more");
			goto out;
		}
		if (mount(cl->dev, cl->mnt, NULL, fl, NULL) < 0) {
			fprintf(stderr, "tensorfs: remount,rw of '%s': %s\n",
				cl->mnt, strerror(errno));
			(void)ioctl(fd, TFS_IOC_SET_RO);
			goto out;
		}
	}
	if (cl->remount_atime >= 0 &&
	    ioctl(fd, TFS_IOC_SET_ATIME, &cl->remount_atime) < 0) {
		fprintf(stderr,
			"tensorfs: remount,%s of '%s': the daemon did "
			"not take the atime option: %s; reads update atime "
			"as before\n",
			how, cl->mnt, strerror(errno));
		goto out;
	}
	if (cl->nodiratime >= 0) {
		int on = !cl->nodiratime;

		if (ioctl(fd, TFS_IOC_SET_DIRATIME, &on) < 0) {
			fprintf(stderr,
				"tensorfs: remount,%s of '%s': the "
				"daemon did not take %s: %s; listings update "
				"directory atimes as before\n",
				how, cl->mnt, on ? "diratime" : "nodiratime",
				strerror(errno));
			goto out;
		}
	}
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* ===== start-up ===== */

/* Where the daemon will log ([mount] log): a bad file is an error now,
 * on the terminal, rather than lost messages later.  1 with a message. */
static int setup_log(struct tfs_daemon *dm, const struct cmdline *cl)
{
	char err[PATH_MAX + 256];

	if (tfs_log_setup(dm->cfg.mount_log, cl->dev, cl->foreground, err,
			  sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 1;
	}
	return GO_ON;
}

/*
 * The data path's settings, and whether they fit this machine: the cache,
 * the pool and the metadata tree (memcheck.h: TFS_META_BYTES_PER_FILE per
 * inode, with headroom) must fit in available memory with the cache's
 * index and MOUNT_SPARE to spare (*spare), and a pinned arena in
 * RLIMIT_MEMLOCK.  Checked twice: before the
 * device is opened for an empty tree, so a cache or pool that cannot fit
 * is refused without reading the device; and after, for the inodes the
 * file system has, against the memory that was available before the tree
 * was loaded (*lim).  0, or 1 with a message.
 */
#define MOUNT_SPARE (64ull << 20)

static int data_path_opts(const struct tfs_config *cfg, struct tfs_fs_opts *fo,
			  struct tfs_mem_limits *lim, uint64_t *spare)
{
	char err[2048];

	fo->cache_bytes = tfs_config_cache_bytes(cfg);
	fo->pool_bytes = tfs_config_pool_bytes(cfg);
	fo->block_size = (size_t)cfg->aio_block_size;
	fo->queue_depth = (unsigned)cfg->aio_queue_depth;
	fo->io_threads = (unsigned)cfg->aio_intra_op_parallelism;
	fo->pin = (int)cfg->offload_param_pin_memory;
	fo->single_submit = (int)cfg->aio_single_submit;
	fo->no_overlap = !cfg->aio_overlap_events;
	fo->log = log_fs;
	/* the cache's index grows with its chunks, not in MOUNT_SPARE */
	*spare = MOUNT_SPARE + tfs_fs_cache_index_bytes(fo);
	if (!cfg->mount_memory_check)
		return 0;
	tfs_mem_limits(lim);
	if (tfs_mem_check_config(lim, cfg, 0, *spare, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 1;
	}
	return 0;
}

/* The second check of data_path_opts(), with the inodes of the loaded
 * file system: 0, or 1 with a message. */
static int meta_fits(const struct tfs_daemon *dm,
		     const struct tfs_mem_limits *lim, uint64_t spare)
{
	struct tfs_fs_info info;
	char err[2048];

	if (!dm->cfg.mount_memory_check)
		return 0;
	tfs_fs_get_info(dm->fs, &info);
	if (tfs_mem_check_config(lim, &dm->cfg, info.inodes, spare, err,
				 sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 1;
	}
	return 0;
}

/*
 * Open and check the device (and replay its journal), before mounting.
 * Read-only (-o ro): the device is opened O_RDONLY (an immutable image
 * or a write-protected device works), nothing is replayed or written,
 * and a file system that needs recovery is refused.
 */
/*
 * lib/ dropped data that the kernel's pages may still hold (a failed
 * write-back): they go too, so that no reader sees bytes the file no
 * longer has.  Called from a write-back thread.
 */
static void fs_changed(void *arg, uint64_t ino, uint64_t off, uint64_t len)
{
	struct tfs_daemon *dm = arg;

	tfs_inval_range(__atomic_load_n(&dm->inval, __ATOMIC_ACQUIRE), ino, off,
			len);
}

static int open_fs(struct tfs_daemon *dm, const char *dev, int ro,
		   int norecovery)
{
	struct tfs_fs_opts fo = { 0 };
	struct tfs_mem_limits lim;
	uint64_t spare = 0;
	char err[512] = "";
	struct stat root;

	fo.commit_interval_ms = (unsigned)dm->cfg.mount_commit_interval_ms;
	fo.atime = dm->atime;
	fo.readonly = ro;
	fo.no_replay = norecovery;
	fo.nodiratime = dm->nodiratime;
	fo.discard = (int)dm->cfg.mount_discard;
	fo.changed = fs_changed;
	fo.changed_arg = dm;
	if (data_path_opts(&dm->cfg, &fo, &lim, &spare))
		return 1;
	/*
	 * Keep glibc's mmap threshold where it starts.  Left dynamic, it rises
	 * to the size of each big mapped block freed (a commit's journal
	 * buffer), and from then on big transient buffers come from the heap,
	 * where they leave resident holes between the tree's allocations:
	 * creating 400,000 files grew the daemon 289 bytes a file for a tree
	 * of 215, and 219 with the threshold fixed.
	 */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	if (tfs_fs_open(dev, &fo, &dm->fs, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s: %s\n", dev, err);
		return 1;
	}
	if (norecovery && tfs_fs_needs_recovery(dm->fs))
		tfs_daemon_log(LOG_WARNING,
			       "%s: mounted read-only without "
			       "replaying the journal (norecovery): the last "
			       "checkpoint as it is; %llu journal "
			       "transaction(s) committed after it are not "
			       "shown; mount it read-write to recover them",
			       dev,
			       (unsigned long long)tfs_fs_not_replayed(dm->fs));
	else if (ro && tfs_fs_needs_recovery(dm->fs)) {
		fprintf(
		    stderr,
		    "tensorfs: %s: was not unmounted cleanly and "
		    "needs recovery (its journal replayed), which a "
		    "read-only mount does not do; mount it read-write once, "
		    "or run 'tensorfs-fsck -y %s', then mount it read-only\n",
		    dev, dev);
		goto out_close;
	}
	if (meta_fits(dm, &lim, spare))
		goto out_close;
	if (tfs_getattr(dm->fs, TFS_FS_ROOT, &root))
		root.st_uid = root.st_gid = 0;
	tfs_statedir_init(&dm->statedir, dm->fs, &dm->cfg, root.st_uid,
			  root.st_gid);
	if (tfs_fs_replayed(dm->fs))
		tfs_daemon_log(LOG_NOTICE,
			       "%s: recovered %llu journal "
			       "transactions after an unclean shutdown",
			       dev,
			       (unsigned long long)tfs_fs_replayed(dm->fs));
	return GO_ON;

out_close:
	tfs_fs_close(dm->fs);
	dm->fs = NULL;
	return 1;
}

/*
 * A FUSE session with our handlers and dm as its userdata, mounted on
 * cl->mnt, with handlers for SIGTERM and SIGINT that end its loop.  The
 * FUSE arguments are built in *args (the caller frees them after the
 * session).  Undone by unmount_session().
 */
static int mount_session(struct tfs_daemon *dm, const struct cmdline *cl,
			 struct fuse_args *args, struct fuse_session **out)
{
	char fsname[2 * PATH_MAX + 128];
	struct fuse_session *se;
	size_t n;

	/*
	 * The mount's source is the device as mount(8) gives other file
	 * systems' (canonical: the real path), its type fuse.tensorfs:
	 * then umount DEVICE finds it, and mount -a sees an fstab line
	 * that is mounted already.  ',' and '\\' escaped for FUSE's -o.
	 */
	n = (size_t)snprintf(fsname, sizeof(fsname), "fsname=");
	for (const char *p = cl->dev; *p; p++) {
		if (*p == ',' || *p == '\\')
			fsname[n++] = '\\';
		fsname[n++] = *p;
	}
	snprintf(fsname + n, sizeof(fsname) - n,
		 ",subtype=tensorfs,default_permissions%s",
		 geteuid() == 0 ? ",allow_other" : "");
	if (fuse_opt_add_arg(args, "tensorfs") ||
	    fuse_opt_add_arg(args, "-o") || fuse_opt_add_arg(args, fsname) ||
	    (cl->fuseopts && (fuse_opt_add_arg(args, "-o") ||
			      fuse_opt_add_arg(args, cl->fuseopts))) ||
	    (cl->debug && fuse_opt_add_arg(args, "-d"))) {
		fprintf(stderr, "tensorfs: out of memory\n");
		return 1;
	}
	se =
	    fuse_session_new(args, &tfs_daemon_ops, sizeof(tfs_daemon_ops), dm);
	if (!se) {
		fprintf(stderr,
			"tensorfs: bad mount options '%s'; see "
			"mount.fuse3(8)\n",
			cl->fuseopts ? cl->fuseopts : "");
		return 2;
	}
	if (fuse_set_signal_handlers(se)) {
		fprintf(stderr, "tensorfs: cannot set signal handlers\n");
		goto out_session;
	}
	if (fuse_session_mount(se, cl->mnt)) {
		fprintf(stderr,
			"tensorfs: cannot mount on '%s' (is /dev/fuse "
			"there, and fusermount3 installed?)\n",
			cl->mnt);
		goto out_signals;
	}
	dm->transport = tfs_transport_new(se, dm, (int)dm->cfg.mount_io_uring);
	if (!dm->transport) {
		fprintf(stderr, "tensorfs: out of memory\n");
		fuse_session_unmount(se);
		goto out_signals;
	}
	dm->statedir.transport = dm->transport;
	*out = se;
	return GO_ON;

out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	return 1;
}

/*
 * Unmounted, the kernel has forgotten us (umount has returned) but the
 * write-back pool may still hold data: from here to exit SIGTERM, SIGINT
 * and SIGHUP are ignored, so that a shutdown's SIGTERM to the remaining
 * processes does not end the final write (SIGKILL still does).
 */
static void unmount_session(struct fuse_session *se, struct tfs_transport *tp)
{
	fuse_session_unmount(se);
	/* the io_uring threads use the session: end them first */
	tfs_transport_stop(tp);
	fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
}

/* ===== kernel tuning ===== */

/*
 * Raise the mount's readahead and dirty-page share (as root).  The bdi is
 * found through /proc/self/mountinfo: stat() of the mount point would
 * ask this daemon, which does not serve requests yet.
 */
static void tune_bdi(const struct tfs_config *cfg, const char *mnt)
{
	char line[8192], dev[64] = "", path[128];
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char d[64], m[4096];

		/* id parent major:minor root mountpoint ... */
		if (sscanf(line, "%*s %*s %63s %*s %4095s", d, m) == 2 &&
		    !strcmp(m, mnt))
			snprintf(dev, sizeof(dev), "%s", d);
	}
	fclose(f);
	if (!*dev)
		return;
	for (int i = 0; i < 2; i++) {
		uint64_t v =
		    i ? cfg->mount_bdi_max_ratio : cfg->mount_read_ahead_kb;
		const char *knob = i ? "max_ratio" : "read_ahead_kb";

		if (!v)
			continue;
		snprintf(path, sizeof(path), "/sys/class/bdi/%s/%s", dev, knob);
		f = fopen(path, "w");
		if (f) {
			int ok =
			    fprintf(f, "%llu\n", (unsigned long long)v) > 0;

			if (fclose(f) == 0 && ok)
				continue;
		}
		if (geteuid() == 0)
			tfs_daemon_log(LOG_WARNING, "cannot set %s to %llu: %s",
				       path, (unsigned long long)v,
				       strerror(errno));
	}
}

/*
 * -o strictatime and -o nodiratime: libfuse does not take them, so the
 * kernel's mount would not say them; make it (as root), so that
 * /proc/mounts shows the policy and a remount through mount(8), which
 * passes the mount's options on, keeps it (remount_atime(),
 * flag_options()).  A bind remount
 * changes only the per-mount flags, all of them: the others are read
 * from mountinfo (not statvfs, which would ask this daemon, not yet
 * serving).
 */
static void show_atime_flags(const char *mnt, int strict, int nodiratime)
{
	static const struct {
		const char *name;
		unsigned long flag;
	} opt[] = {
		{ "ro", MS_RDONLY },
		{ "nosuid", MS_NOSUID },
		{ "nodev", MS_NODEV },
		{ "noexec", MS_NOEXEC },
		{ "nodiratime", MS_NODIRATIME },
		{ "noatime", MS_NOATIME },
		{ "relatime", MS_RELATIME },
	};
	char line[8192], m[4096], o[4096], last[4096] = "";
	unsigned long fl = 0;
	FILE *f = fopen("/proc/self/mountinfo", "r");

	if (!f)
		return;
	/* id parent major:minor root mountpoint options ...: the last */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %4095s %4095s", m, o) == 2 &&
		    !strcmp(m, mnt))
			memcpy(last, o, sizeof(last));
	fclose(f);
	if (!*last)
		return;
	for (char *save = NULL, *t = strtok_r(last, ",", &save); t;
	     t = strtok_r(NULL, ",", &save))
		for (size_t i = 0; i < sizeof(opt) / sizeof(opt[0]); i++)
			if (!strcmp(t, opt[i].name))
				fl |= opt[i].flag;
	if (strict)
		fl = (fl & ~(MS_NOATIME | MS_RELATIME)) | MS_STRICTATIME;
	if (nodiratime)
		fl |= MS_NODIRATIME;
	if (mount(NULL, mnt, NULL, MS_REMOUNT | MS_BIND | fl, NULL) < 0 &&
	    geteuid() == 0)
		tfs_daemon_log(LOG_WARNING,
			       "%s%s%s: cannot show it in the "
			       "mount's flags: %s",
			       strict ? "strictatime" : "",
			       strict && nodiratime ? ", " : "",
			       nodiratime ? "nodiratime" : "", strerror(errno));
}

/*
 * Mounted: tune the kernel's side, daemonise (unless foreground), and
 * only then start lib/'s threads, since fork keeps only this one.
 */
static int start_daemon(struct tfs_daemon *dm, struct fuse_session *se,
			const char *dev, const char *mnt, int foreground)
{
	struct tfs_inval *iv;
	int rc;

	tune_bdi(&dm->cfg, mnt);
	if (dm->atime == TFS_ATIME_STRICT || dm->nodiratime)
		show_atime_flags(mnt, dm->atime == TFS_ATIME_STRICT,
				 dm->nodiratime);
	/* fork keeps only this thread: no ring may cross it */
	tfs_fs_prepare_fork();
	if (fuse_daemonize(foreground)) {
		tfs_daemon_log(LOG_ERR, "cannot daemonise");
		return 1;
	}
	if (!foreground) {
		/* stderr is /dev/null now: the log is all the user has */
		tfs_log_detach();
		tfs_daemon_log(LOG_INFO, "%s mounted on %s%s", dev, mnt,
			       dm->cfg.mount_discard ? " (discard)" : "");
	}
	/* Reclaim must not wait on us while we write for it. */
	(void)prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0);
	iv = tfs_inval_new(se);
	if (!iv) {
		tfs_daemon_log(LOG_ERR, "cannot start: out of memory or "
					"threads");
		return 1;
	}
	/* read by lib/'s write-back threads (fs_changed()) */
	__atomic_store_n(&dm->inval, iv, __ATOMIC_RELEASE);
	rc = tfs_fs_start(dm->fs);
	if (rc) {
		tfs_daemon_log(LOG_ERR, "cannot start: %s", strerror(-rc));
		return 1;
	}
	return GO_ON;
}

/* Serve requests until an unmount or a signal: 0, or 1 on an error. */
static int serve(struct tfs_daemon *dm, struct fuse_session *se)
{
	struct fuse_loop_config *loop = fuse_loop_cfg_create();
	unsigned int threads = (unsigned)dm->cfg.mount_max_threads;
	int rc;

	if (!loop)
		return 1;
	fuse_loop_cfg_set_clone_fd(loop, 1);
	fuse_loop_cfg_set_max_threads(loop, threads);
	/* keep every worker once started: with fewer kept idle, bursts of
	 * requests (QD 8 and more) made libfuse start and end threads, each
	 * with a new /dev/fuse clone, all the time; an idle one costs only
	 * its stack */
	fuse_loop_cfg_set_idle_threads(loop, threads);
	rc = fuse_session_loop_mt(se, loop);
	fuse_loop_cfg_destroy(loop);
	return rc < 0 ? 1 : 0;
}

/* Write everything and a clean checkpoint: ret, or 1 if that failed. */
static int close_fs(struct tfs_daemon *dm, const char *dev, int ret)
{
	int rc = tfs_fs_close(dm->fs);

	dm->fs = NULL;
	if (rc) {
		tfs_daemon_log(LOG_ERR,
			       "%s: final write failed: %s; run "
			       "tensorfs-fsck %s",
			       dev, strerror(-rc), dev);
		ret = 1;
	}
	return ret;
}

int main(int argc, char **argv)
{
	struct tfs_daemon dm = { 0 };
	struct cmdline cl = { 0 };
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se;
	int ret;

	tfs_closeout("tensorfs", 1);
	pthread_mutex_init(&dm.rw.mu, NULL);
	ret = parse_cmdline(argc, argv, &cl);
	if (ret != GO_ON)
		goto out;
	ret = read_config(&cl, &dm);
	if (ret != GO_ON)
		goto out;
	if (cl.print_config) {
		tfs_config_print(&dm.cfg, stdout);
		ret = 0;
		goto out;
	}
	ret = resolve_operands(&cl);
	if (ret != GO_ON)
		goto out;
	if (cl.remount) {
		ret = remount(&cl);
		goto out;
	}
	ret = setup_log(&dm, &cl);
	if (ret != GO_ON)
		goto out;
	dm.nodiratime = cl.nodiratime > 0;
	if (cl.norecovery && !cl.ro) {
		fprintf(stderr,
			"tensorfs: -o norecovery needs -o ro: a "
			"read-write mount always replays the journal; use "
			"-o ro,norecovery to look at the last checkpoint as "
			"it is\n");
		ret = 2;
		goto out;
	}
	if (dm.cfg.mount_io_uring == TFS_URING_ON) {
		char why[512], from[256];

		if (!tfs_transport_uring_available(why, sizeof(why))) {
			fprintf(stderr,
				"tensorfs: %s, but %s; set io_uring=auto to "
				"fall back to /dev/fuse\n",
				tfs_config_describe(
				    &dm.cfg,
				    tfs_config_key("mount", "io_uring"), from,
				    sizeof(from)),
				why);
			ret = 1;
			goto out;
		}
	}
	ret = open_fs(&dm, cl.dev, cl.ro, cl.norecovery);
	if (ret != GO_ON)
		goto out;
	ret = mount_session(&dm, &cl, &args, &se);
	if (ret != GO_ON)
		goto out_fs;
	ret = start_daemon(&dm, se, cl.dev, cl.mnt, cl.foreground);
	if (ret == GO_ON)
		ret = serve(&dm, se);
	/* its last replies and notifications, while the session lives */
	tfs_inval_stop(dm.inval);
	unmount_session(se, dm.transport);
out_fs:
	ret = close_fs(&dm, cl.dev, ret);
out:
	fuse_opt_free_args(&args);
	tfs_inval_free(dm.inval); /* after close_fs(): fs_changed() */
	tfs_transport_free(dm.transport);
	free(cl.fuseopts);
	free(dm.rw.v);
	pthread_mutex_destroy(&dm.rw.mu);
	return ret;
}
