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
 */
#ifndef FUSE_USE_VERSION
#define FUSE_USE_VERSION 312
#endif

#include <errno.h>
#include <fuse_lowlevel.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "config.h"
#include "daemon.h"
#include "fs.h"
#include "io.h"
#include "memcheck.h"
#include "statedir.h"

#ifndef PR_SET_IO_FLUSHER
#define PR_SET_IO_FLUSHER 57
#endif

/* ===== logging ===== */

/*
 * Where tfs_daemon_log() writes: stderr with -f or -d, else syslog.  A
 * file-level static rather than a field of struct tfs_daemon because
 * lib/ logs through tfs_fs_opts.log, a callback with no context argument.
 * Set once while the command line is read, before any thread starts.
 */
static int log_foreground;

void tfs_daemon_log(int prio, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	if (log_foreground) {
		fputs("tensorfs: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	} else {
		vsyslog(prio, fmt, ap);
	}
	va_end(ap);
}

static void log_fs(const char *msg)
{
	tfs_daemon_log(LOG_ERR, "%s", msg);
}

/* ===== start-up ===== */

/*
 * The data path's settings, and whether they fit this machine: the cache
 * and the pool must fit in available memory with MOUNT_SPARE to spare,
 * and a pinned arena in RLIMIT_MEMLOCK.  0, or 1 with a message.
 */
#define MOUNT_SPARE (64ull << 20)

static int data_path_opts(const struct tfs_config *cfg,
			  struct tfs_fs_opts *fo)
{
	struct tfs_mem_limits lim;
	char err[1024];

	fo->cache_bytes = tfs_config_cache_bytes(cfg);
	fo->pool_bytes = tfs_config_pool_bytes(cfg);
	fo->block_size = (size_t)cfg->aio_block_size;
	fo->queue_depth = (unsigned)cfg->aio_queue_depth;
	fo->io_threads = (unsigned)cfg->aio_intra_op_parallelism;
	fo->pin = (int)cfg->offload_param_pin_memory;
	fo->single_submit = (int)cfg->aio_single_submit;
	fo->no_overlap = !cfg->aio_overlap_events;
	fo->log = log_fs;
	if (!cfg->mount_memory_check)
		return 0;
	tfs_mem_limits(&lim);
	if (tfs_mem_check(&lim, fo->cache_bytes, fo->pool_bytes, fo->pin,
			  MOUNT_SPARE, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 1;
	}
	return 0;
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
		uint64_t v = i ? cfg->mount_bdi_max_ratio
			       : cfg->mount_read_ahead_kb;
		const char *knob = i ? "max_ratio" : "read_ahead_kb";

		if (!v)
			continue;
		snprintf(path, sizeof(path), "/sys/class/bdi/%s/%s", dev, knob);
		f = fopen(path, "w");
		if (f) {
			int ok = fprintf(f, "%llu\n", (unsigned long long)v) > 0;

			if (fclose(f) == 0 && ok)
				continue;
		}
		if (geteuid() == 0)
			tfs_daemon_log(LOG_WARNING, "cannot set %s to %llu: %s",
				       path, (unsigned long long)v,
				       strerror(errno));
	}
}

/* ===== command line ===== */

/*
 * Take the settings (key=value with a known key) out of a -o list into
 * cfg and leave the FUSE options in *opts (NULL if none are left).
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

		if (eq) {
			*eq = '\0';
			if (tfs_config_is_key(tok)) {
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
"file made with mkfs.tensorfs) at MOUNTPOINT, e.g. /local_nvme.  Tensors are\n"
"offloaded by writing files there; point DeepSpeed's nvme_path at it.\n"
"\n"
"Options:\n"
"  -c FILE.ini  read settings from FILE.ini (see conf/tensorfs.ini and\n"
"               tensorfs.ini(5)); a bad key or value stops the mount\n"
"  -o OPT,...   mount options: a setting as key=value or section.key=value\n"
"               overrides the file (-o commit_interval_ms=1000); others go\n"
"               to FUSE: allow_other (the default when run as root), ro, and\n"
"               the rest of mount.fuse3(8)\n"
"  --print-config  print the effective configuration (defaults, -c, -o) as\n"
"               an INI file and exit\n"
"  -f           stay in the foreground; log to stderr instead of syslog\n"
"  -d           debug: print every FUSE request (implies -f)\n"
"  -h, --help   print this help and exit\n"
"  -V, --version  print the version and exit\n"
"\n"
"Unmount with 'fusermount3 -u MOUNTPOINT' (or umount as root), or send the\n"
"daemon SIGTERM: both write all data and leave a clean file system.\n"
"\n"
"Exit status: 0 after a clean unmount, 1 on an error (the message says what\n"
"to do), 2 on a usage or configuration error.\n", f);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "print-config", no_argument, NULL, 'P' },
		{ NULL, 0, NULL, 0 },
	};
	struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	struct fuse_loop_config *cfg = NULL;
	struct tfs_daemon dm = { 0 };
	struct tfs_fs_opts fo = { 0 };
	char dev[PATH_MAX], mnt[PATH_MAX], err[512] = "", fsname[PATH_MAX + 128];
	const char *conf = NULL;
	int debug = 0, c, rc, ret = 1, print_config = 0;
	struct stat st;
	char *fuseopts = NULL;

	while ((c = getopt_long(argc, argv, "c:o:fdhV", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			conf = optarg;
			break;
		case 'o':
			if (fuseopts) {
				char *n = malloc(strlen(fuseopts) + strlen(optarg) + 2);

				if (!n)
					return 1;
				sprintf(n, "%s,%s", fuseopts, optarg);
				free(fuseopts);
				fuseopts = n;
			} else {
				fuseopts = strdup(optarg);
			}
			break;
		case 'f':
			log_foreground = 1;
			break;
		case 'd':
			debug = 1;
			log_foreground = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'P':
			print_config = 1;
			break;
		case 'V':
			printf("tensorfs %s (libfuse %d)\n", TFS_VERSION_STRING,
			       fuse_version());
			return 0;
		default:
			fputs("Try 'tensorfs --help' for more information.\n",
			      stderr);
			return 2;
		}
	}
	tfs_config_defaults(&dm.cfg);
	if (conf && tfs_config_load(&dm.cfg, conf, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s\n", err);
		return 2;
	}
	if (fuseopts && split_options(&dm.cfg, &fuseopts, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: -o %s\n", err);
		return 2;
	}
	if (dm.cfg.warnings[0])
		fprintf(stderr, "tensorfs: %s", dm.cfg.warnings);
	if (tfs_config_validate(&dm.cfg, err, sizeof(err))) {
		fprintf(stderr, "tensorfs: %s%s%s\n", conf ? conf : "",
			conf ? ": " : "", err);
		return 2;
	}
	if (print_config) {
		tfs_config_print(&dm.cfg, stdout);
		return 0;
	}
	if (argc - optind != 2) {
		fprintf(stderr, "tensorfs: %s\n"
			"Usage: tensorfs [-c FILE.ini] [-o OPT,...] [-f] [-d] "
			"DEVICE MOUNTPOINT\n"
			"Try 'tensorfs --help' for more information.\n",
			argc - optind < 2 ? "missing DEVICE or MOUNTPOINT"
					  : "too many arguments");
		return 2;
	}
	fo.commit_interval_ms = (unsigned)dm.cfg.mount_commit_interval_ms;
	dm.attr_timeout = (double)dm.cfg.mount_attr_timeout_ms / 1000.0;
	if (!realpath(argv[optind], dev)) {
		fprintf(stderr, "tensorfs: device '%s': %s\n", argv[optind],
			strerror(errno));
		return 1;
	}
	if (stat(argv[optind + 1], &st) < 0) {
		fprintf(stderr, "tensorfs: mount point '%s' does not exist; "
			"create it with mkdir -p %s\n",
			argv[optind + 1], argv[optind + 1]);
		return 1;
	}
	if (!S_ISDIR(st.st_mode)) {
		fprintf(stderr, "tensorfs: mount point '%s' is not a "
			"directory\n", argv[optind + 1]);
		return 1;
	}
	if (!realpath(argv[optind + 1], mnt)) {
		fprintf(stderr, "tensorfs: mount point '%s': %s\n",
			argv[optind + 1], strerror(errno));
		return 1;
	}

	if (data_path_opts(&dm.cfg, &fo))
		return 1;
	rc = tfs_fs_open(dev, &fo, &dm.fs, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "tensorfs: %s: %s\n", dev, err);
		return 1;
	}
	{
		struct stat root;

		if (tfs_getattr(dm.fs, TFS_FS_ROOT, &root) == 0)
			tfs_statedir_init(&dm.statedir, root.st_uid,
					  root.st_gid);
		else
			tfs_statedir_init(&dm.statedir, 0, 0);
	}
	if (tfs_fs_replayed(dm.fs))
		tfs_daemon_log(LOG_NOTICE, "%s: recovered %llu journal "
			       "transactions after an unclean shutdown", dev,
			       (unsigned long long)tfs_fs_replayed(dm.fs));

	snprintf(fsname, sizeof(fsname),
		 "fsname=tensorfs:%s,subtype=tensorfs,default_permissions%s",
		 dev, geteuid() == 0 ? ",allow_other" : "");
	if (fuse_opt_add_arg(&args, "tensorfs") ||
	    fuse_opt_add_arg(&args, "-o") || fuse_opt_add_arg(&args, fsname) ||
	    (fuseopts && (fuse_opt_add_arg(&args, "-o") ||
			  fuse_opt_add_arg(&args, fuseopts))) ||
	    (debug && fuse_opt_add_arg(&args, "-d"))) {
		fprintf(stderr, "tensorfs: out of memory\n");
		goto out_fs;
	}
	se = fuse_session_new(&args, &tfs_daemon_ops, sizeof(tfs_daemon_ops),
			      &dm);
	if (!se) {
		fprintf(stderr, "tensorfs: bad mount options '%s'; see "
			"mount.fuse3(8)\n", fuseopts ? fuseopts : "");
		ret = 2;
		goto out_fs;
	}
	if (fuse_set_signal_handlers(se)) {
		fprintf(stderr, "tensorfs: cannot set signal handlers\n");
		goto out_session;
	}
	if (fuse_session_mount(se, mnt)) {
		fprintf(stderr, "tensorfs: cannot mount on '%s' (is /dev/fuse "
			"there, and fusermount3 installed?)\n", mnt);
		goto out_signals;
	}
	tune_bdi(&dm.cfg, mnt);
	/* fork keeps only this thread: no ring may cross it */
	tfs_io_thread_exit();
	if (fuse_daemonize(log_foreground)) {
		tfs_daemon_log(LOG_ERR, "cannot daemonise");
		goto out_unmount;
	}
	if (!log_foreground)
		openlog("tensorfs", LOG_PID, LOG_DAEMON);
	/* Reclaim must not wait on us while we write for it. */
	(void)prctl(PR_SET_IO_FLUSHER, 1, 0, 0, 0);
	rc = tfs_fs_start(dm.fs);
	if (rc) {
		tfs_daemon_log(LOG_ERR, "cannot start: %s", strerror(-rc));
		goto out_unmount;
	}
	cfg = fuse_loop_cfg_create();
	if (!cfg)
		goto out_unmount;
	fuse_loop_cfg_set_clone_fd(cfg, 1);
	fuse_loop_cfg_set_max_threads(cfg,
				      (unsigned)dm.cfg.mount_max_threads);
	fuse_loop_cfg_set_idle_threads(
		cfg, (unsigned)(dm.cfg.mount_max_threads + 1) / 2);
	rc = fuse_session_loop_mt(se, cfg);
	fuse_loop_cfg_destroy(cfg);
	ret = rc < 0 ? 1 : 0;
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
out_fs:
	rc = tfs_fs_close(dm.fs);
	if (rc) {
		tfs_daemon_log(LOG_ERR, "%s: final write failed: %s; run "
			       "tensorfs-fsck %s", dev, strerror(-rc), dev);
		ret = 1;
	}
	fuse_opt_free_args(&args);
	free(fuseopts);
	return ret;
}
