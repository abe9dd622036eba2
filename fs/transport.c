/*
 * transport.c: part of the FUSE daemon: the daemon's side of /dev/fuse
 * under libfuse, and what the connection negotiates beyond what libfuse
 * 3.14 knows.
 *
 * libfuse 3.14 builds its INIT reply from the 32-bit capability bits it
 * knows, and passes on only the request fields it knows.  The kernel
 * offers more: FUSE_HANDLE_KILLPRIV_V2 (the daemon clears setuid, setgid
 * and file capabilities, so a write no longer costs a getxattr round
 * trip), FUSE_DIRECT_IO_ALLOW_MMAP (shared mmap of a file opened
 * O_DIRECT), FOPEN_PARALLEL_DIRECT_WRITES (direct writes to one file
 * under a shared inode lock) and FUSE_OVER_IO_URING (uring.c).  So the
 * daemon installs its own read and writev hooks with
 * fuse_session_custom_io(), on the mount's own /dev/fuse descriptor,
 * and libfuse goes on mounting and dispatching.  With clone_fd, each
 * worker's hooks get its own clone: a reply goes back on the descriptor
 * it is given, which is the one its request came on.
 *
 * The read hook looks at each request before libfuse does: the INIT's
 * unique and what the kernel offers, and the kill-suid/sgid flags of a
 * WRITE, SETATTR or OPEN, which libfuse 3.14 drops and which the
 * handler then reads from this thread (tfs_req_kill_suidgid()).
 *
 * The writev hook sees every reply.  It ORs into the INIT reply the
 * flags the daemon wants, only those the kernel offered, with
 * FUSE_INIT_EXT when any is in the upper word; it never raises the minor
 * version, since libfuse parses requests by it.  It ORs the flags a
 * handler asked for (tfs_req_open_flags()) into this thread's OPEN or
 * CREATE reply.  A reply to a request that came over io_uring goes back
 * over io_uring; notifications (unique 0) always go to /dev/fuse.
 *
 * The kernel handles the INIT reply within the writev() that sends it,
 * so when that returns the connection is initialised, and the hook then
 * starts the io_uring queues if FUSE_OVER_IO_URING was negotiated.
 *
 * -o io_uring=auto (the default) uses io_uring where the kernel has it
 * and /sys/module/fuse/parameters/enable_uring allows it, and otherwise
 * says why once in the log; on refuses to mount without it (fuse_main.c
 * asks tfs_transport_uring_available() first); off never offers it.
 */
#include "transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon.h"
#include "fuse_abi.h"
#include "uring.h"

#define ENABLE_URING "/sys/module/fuse/parameters/enable_uring"

/* The INIT flags the daemon asks for beyond libfuse's, by name. */
static const struct {
	uint64_t flag;
	const char *name;
} features[] = {
	{ FUSE_HANDLE_KILLPRIV_V2, "handle_killpriv_v2" },
	{ FUSE_DIRECT_IO_ALLOW_MMAP, "direct_io_allow_mmap" },
	{ FUSE_OVER_IO_URING, "over_io_uring" },
};
#define NFEATURES (sizeof(features) / sizeof(features[0]))

struct tfs_transport {
	struct fuse_session *se;
	struct tfs_daemon *dm;
	int mode;		 /* TFS_URING_* */
	uint64_t init_unique;	 /* the INIT request's, 0 before it */
	uint64_t offered;	 /* what the kernel offered in INIT */
	uint64_t negotiated;	 /* what the INIT reply said */
	uint32_t minor;		 /* the protocol minor libfuse replied */
	uint32_t kminor;	 /* the kernel's */
	struct tfs_uring *uring; /* io_uring queues, or NULL */
	char uring_why[256];	 /* why not io_uring, once known */
};

/* The request this thread is serving (read hook, or uring.c). */
static __thread struct {
	uint64_t unique;
	uint32_t opcode;
	int kill_suidgid;
	uint32_t open_flags;
} cur;

int tfs_req_kill_suidgid(void)
{
	return cur.kill_suidgid;
}

void tfs_req_open_flags(uint32_t flags)
{
	cur.open_flags |= flags;
}

int tfs_transport_uring_available(char *why, size_t len)
{
	char v[8] = "";
	FILE *f = fopen(ENABLE_URING, "r");

	if (!f) {
		snprintf(why, len,
			 "this kernel has no FUSE over io_uring (%s is "
			 "missing: it needs Linux 6.14 or later built with "
			 "CONFIG_FUSE_IO_URING)",
			 ENABLE_URING);
		return 0;
	}
	if (!fgets(v, sizeof(v), f))
		v[0] = '\0';
	fclose(f);
	if (v[0] != 'Y' && v[0] != 'y' && v[0] != '1') {
		snprintf(why, len,
			 "FUSE over io_uring is turned off (%s is N; "
			 "as root: echo Y > %s; see tensorfs(8), FUSE "
			 "TRANSPORT)",
			 ENABLE_URING, ENABLE_URING);
		return 0;
	}
	return 1;
}

/* Whether the 32-bit field at off of a request's first argument (arg,
 * alen bytes; need: that argument's size) has a bit of mask. */
static int has_flag(const char *arg, size_t alen, size_t need, size_t off,
		    uint32_t mask)
{
	uint32_t v;

	if (alen < need)
		return 0;
	memcpy(&v, arg + off, sizeof(v));
	return (v & mask) != 0;
}

/* Note what the request in buf (n bytes, as read) asks beyond libfuse. */
void tfs_transport_inspect(struct tfs_transport *tp, const void *buf, size_t n)
{
	const struct fuse_in_header *in = buf;
	const char *arg = (const char *)buf + sizeof(*in);
	size_t alen;

	memset(&cur, 0, sizeof(cur));
	if (n < sizeof(*in))
		return;
	alen = n - sizeof(*in);
	cur.unique = in->unique;
	cur.opcode = in->opcode;
	switch (in->opcode) {
	case FUSE_INIT: {
		struct fuse_init_in ii = { 0 };

		if (alen < offsetof(struct fuse_init_in, flags2))
			return;
		memcpy(&ii, arg, alen < sizeof(ii) ? alen : sizeof(ii));
		tp->offered = ii.flags;
		if ((ii.flags & FUSE_INIT_EXT) && alen >= sizeof(ii))
			tp->offered |= (uint64_t)ii.flags2 << 32;
		tp->kminor = ii.minor;
		__atomic_store_n(&tp->init_unique, in->unique,
				 __ATOMIC_RELEASE);
		break;
	}
	case FUSE_WRITE:
		cur.kill_suidgid =
		    has_flag(arg, alen, sizeof(struct fuse_write_in),
			     offsetof(struct fuse_write_in, write_flags),
			     FUSE_WRITE_KILL_SUIDGID);
		break;
	case FUSE_SETATTR:
		cur.kill_suidgid =
		    has_flag(arg, alen, sizeof(struct fuse_setattr_in),
			     offsetof(struct fuse_setattr_in, valid),
			     FATTR_KILL_SUIDGID);
		break;
	case FUSE_OPEN:
		cur.kill_suidgid =
		    has_flag(arg, alen, sizeof(struct fuse_open_in),
			     offsetof(struct fuse_open_in, open_flags),
			     FUSE_OPEN_KILL_SUIDGID);
		break;
	case FUSE_CREATE:
		cur.kill_suidgid =
		    has_flag(arg, alen, sizeof(struct fuse_create_in),
			     offsetof(struct fuse_create_in, open_flags),
			     FUSE_OPEN_KILL_SUIDGID);
		break;
	default:
		break;
	}
}

/* The hooks get the session's userdata: the daemon, which holds us. */
static ssize_t hook_read(int fd, void *buf, size_t len, void *userdata)
{
	struct tfs_daemon *dm = userdata;
	ssize_t n = read(fd, buf, len);

	if (n > 0)
		tfs_transport_inspect(dm->transport, buf, (size_t)n);
	return n;
}

static ssize_t total_len(const struct iovec *iov, int count)
{
	size_t n = 0;

	for (int i = 0; i < count; i++)
		n += iov[i].iov_len;
	return (ssize_t)n;
}

/* What the daemon asks for beyond libfuse, given the mode. */
static uint64_t wanted(const struct tfs_transport *tp)
{
	uint64_t w = FUSE_HANDLE_KILLPRIV_V2 | FUSE_DIRECT_IO_ALLOW_MMAP;

	if (tp->mode != TFS_URING_OFF && !tp->uring_why[0])
		w |= FUSE_OVER_IO_URING;
	return w;
}

/* The one line the log has of what INIT gave: the transport (and why
 * not io_uring), the features beyond libfuse's. */
static void log_init(const struct tfs_transport *tp, uint64_t fl)
{
	char how[400], got[160] = "", lack[160] = "";

	if (tp->uring && !tp->uring_why[0])
		snprintf(how, sizeof(how), "over io_uring (%s)",
			 tfs_uring_describe(tp->uring));
	else
		snprintf(how, sizeof(how), "over /dev/fuse, not io_uring: %s",
			 tp->uring_why);
	for (size_t i = 0; i < NFEATURES; i++) {
		char *l = fl & features[i].flag ? got : lack;

		if (features[i].flag == FUSE_OVER_IO_URING)
			continue;
		snprintf(l + strlen(l), 160 - strlen(l), "%s%s", *l ? ", " : "",
			 features[i].name);
	}
	if (tp->dm->parallel_dio)
		snprintf(got + strlen(got), sizeof(got) - strlen(got), "%s%s",
			 *got ? ", " : "", "parallel_direct_writes");
	tfs_daemon_log(LOG_INFO,
		       "FUSE protocol 7.%u (kernel 7.%u), requests %s; "
		       "negotiated: %s%s%s",
		       tp->minor, tp->kminor, how, *got ? got : "nothing more",
		       *lack ? "; not offered: " : "", lack);
}

/*
 * Start the queues of a connection that negotiated FUSE_OVER_IO_URING,
 * whose INIT reply was io.  The writev hook finds them (tp->uring)
 * before the first request can arrive over them.
 */
static void start_uring(struct tfs_transport *tp, int fd,
			const struct fuse_init_out *io)
{
	/* max_pages pages is the largest payload the kernel sends */
	size_t payload = io->max_write;
	struct tfs_uring *u;
	int err;

	if ((size_t)io->max_pages * 4096 > payload)
		payload = (size_t)io->max_pages * 4096;
	u = tfs_uring_new(tp, tp->se, fd, payload,
			  (unsigned)tp->dm->cfg.mount_max_threads, &err);
	if (!u) {
		snprintf(tp->uring_why, sizeof(tp->uring_why),
			 "its queues could not be made (%s)", strerror(-err));
		tfs_uring_refuse(fd);
		return;
	}
	__atomic_store_n(&tp->uring, u, __ATOMIC_RELEASE);
	err = tfs_uring_run(u);
	if (err)
		snprintf(tp->uring_why, sizeof(tp->uring_why),
			 "its threads could not start (%s)", strerror(-err));
}

/*
 * Send the INIT reply with the daemon's flags ORed in, then start what
 * they turned on.  iov[1] is struct fuse_init_out (of libfuse's minor).
 */
static ssize_t send_init(struct tfs_transport *tp, int fd,
			 const struct iovec *iov, int count)
{
	struct fuse_out_header oh;
	struct fuse_init_out io;
	struct iovec v[2];
	uint64_t fl, add;
	ssize_t n;

	if (count != 2 || iov[0].iov_len != sizeof(oh) ||
	    iov[1].iov_len > sizeof(io) ||
	    iov[1].iov_len < offsetof(struct fuse_init_out, flags2))
		return writev(fd, iov, count);
	memcpy(&oh, iov[0].iov_base, sizeof(oh));
	if (oh.error)
		return writev(fd, iov, count);
	memset(&io, 0, sizeof(io));
	memcpy(&io, iov[1].iov_base, iov[1].iov_len);
	fl = io.flags;
	if (iov[1].iov_len >= offsetof(struct fuse_init_out, unused))
		fl |= (uint64_t)io.flags2 << 32;
	add = wanted(tp) & tp->offered & ~fl;
	/* the upper word is read only with FUSE_INIT_EXT */
	if ((add >> 32) &&
	    (!(tp->offered & FUSE_INIT_EXT) ||
	     iov[1].iov_len < offsetof(struct fuse_init_out, unused)))
		add &= 0xffffffffu;
	fl |= add;
	if (fl >> 32)
		fl |= FUSE_INIT_EXT;
	io.flags = (uint32_t)fl;
	if (iov[1].iov_len >= offsetof(struct fuse_init_out, unused))
		io.flags2 = (uint32_t)(fl >> 32);
	tp->negotiated = fl;
	tp->minor = io.minor;
	v[0] = iov[0];
	v[1].iov_base = &io;
	v[1].iov_len = iov[1].iov_len;
	n = writev(fd, v, 2);
	if (n < 0)
		return n;
	/* the kernel has taken the reply: the connection is initialised */
	tp->dm->killpriv_v2 = (fl & FUSE_HANDLE_KILLPRIV_V2) != 0;
	tp->dm->direct_io_allow_mmap = (fl & FUSE_DIRECT_IO_ALLOW_MMAP) != 0;
	/* the kernel takes the open flag from 7.36 (Linux 6.2) */
	tp->dm->parallel_dio = tp->kminor >= 36;
	if (fl & FUSE_OVER_IO_URING)
		start_uring(tp, fd, &io);
	else if (tp->mode != TFS_URING_OFF && !tp->uring_why[0])
		snprintf(tp->uring_why, sizeof(tp->uring_why),
			 "the kernel did not offer it at INIT");
	log_init(tp, fl);
	return n;
}

static ssize_t hook_writev(int fd, struct iovec *iov, int count, void *userdata)
{
	struct tfs_daemon *dm = userdata;
	struct tfs_transport *tp = dm->transport;
	const struct fuse_out_header *oh = iov[0].iov_base;
	struct tfs_uring *u = __atomic_load_n(&tp->uring, __ATOMIC_ACQUIRE);
	struct iovec patched[2];
	char body[sizeof(struct fuse_entry_out) + sizeof(struct fuse_open_out)];

	if (count < 1 || iov[0].iov_len < sizeof(*oh) || oh->unique == 0)
		return writev(fd, iov, count);
	if (oh->unique == cur.unique && cur.open_flags && !oh->error &&
	    (cur.opcode == FUSE_OPEN || cur.opcode == FUSE_CREATE) &&
	    count == 2 && iov[1].iov_len >= sizeof(struct fuse_open_out) &&
	    iov[1].iov_len <= sizeof(body)) {
		struct fuse_open_out *oo;

		memcpy(body, iov[1].iov_base, iov[1].iov_len);
		oo = (struct fuse_open_out *)(void *)(body + iov[1].iov_len -
						      sizeof(*oo));
		oo->open_flags |= cur.open_flags;
		patched[0] = iov[0];
		patched[1].iov_base = body;
		patched[1].iov_len = iov[1].iov_len;
		iov = patched;
	}
	if (u) {
		int rc = tfs_uring_reply(u, iov, count);

		if (rc > 0)
			return total_len(iov, count);
		if (rc < 0) {
			errno = -rc;
			return -1;
		}
	}
	if (oh->unique == __atomic_load_n(&tp->init_unique, __ATOMIC_ACQUIRE))
		return send_init(tp, fd, iov, count);
	return writev(fd, iov, count);
}

struct tfs_transport *tfs_transport_new(struct fuse_session *se,
					struct tfs_daemon *dm, int mode)
{
	const struct fuse_custom_io io = {
		.read = hook_read,
		.writev = hook_writev,
	};
	struct tfs_transport *tp = calloc(1, sizeof(*tp));

	if (!tp)
		return NULL;
	tp->se = se;
	tp->dm = dm;
	tp->mode = mode;
	if (mode == TFS_URING_OFF)
		snprintf(tp->uring_why, sizeof(tp->uring_why),
			 "io_uring=off was asked for");
	else if (tfs_transport_uring_available(tp->uring_why,
					       sizeof(tp->uring_why)))
		tp->uring_why[0] = '\0';
	if (fuse_session_custom_io(se, &io, fuse_session_fd(se))) {
		free(tp);
		return NULL;
	}
	return tp;
}

void tfs_transport_stop(struct tfs_transport *tp)
{
	if (tp && tp->uring)
		tfs_uring_stop(tp->uring);
}

void tfs_transport_free(struct tfs_transport *tp)
{
	if (!tp)
		return;
	tfs_transport_stop(tp);
	tfs_uring_free(tp->uring);
	free(tp);
}

/* One value: a "name value" line, a JSON member, or a Prometheus
 * sample with its HELP and TYPE (a counter's name ends in _total), as
 * the counters of lib/stats.c are. */
static void put(FILE *m, int fmt, const char *name, unsigned long long v,
		int counter, const char *help)
{
	if (fmt == 0)
		fprintf(m, "%s %llu\n", name, v);
	else if (fmt == 1)
		fprintf(m, ",\n  \"%s\": %llu", name, v);
	else
		fprintf(m,
			"# HELP tensorfs_%s%s %s\n# TYPE tensorfs_%s%s %s\n"
			"tensorfs_%s%s %llu\n",
			name, counter ? "_total" : "", help, name,
			counter ? "_total" : "", counter ? "counter" : "gauge",
			name, counter ? "_total" : "", v);
}

void tfs_transport_render(const struct tfs_transport *tp, int fmt, FILE *m)
{
	int on = tp && tp->uring && !tp->uring_why[0];
	uint64_t fl = tp ? tp->negotiated : 0;
	uint64_t served = tp && tp->uring ? tfs_uring_served(tp->uring) : 0;
	char name[64];

	put(m, fmt, "fuse_io_uring", (unsigned)on, 0,
	    "1 when FUSE requests travel over io_uring, 0 over /dev/fuse");
	put(m, fmt, "fuse_uring_requests", served, 1,
	    "FUSE requests served over io_uring");
	for (size_t i = 0; i < NFEATURES; i++) {
		snprintf(name, sizeof(name), "fuse_%s", features[i].name);
		put(m, fmt, name, (fl & features[i].flag) != 0, 0,
		    "1 when the connection negotiated this FUSE feature");
	}
	put(m, fmt, "fuse_parallel_direct_writes",
	    tp ? (unsigned)tp->dm->parallel_dio : 0, 0,
	    "1 when direct writes to one file reach the daemon in parallel");
}
