/*
 * fuse_abi.h: part of the FUSE daemon: the kernel's FUSE wire format,
 * from the uapi header <linux/fuse.h>, and what the build machine's copy
 * lacks.
 *
 * Debian 12's linux-libc-dev has protocol 7.38: the request and reply
 * structures, FUSE_HANDLE_KILLPRIV_V2 and the KILL_SUIDGID flags, and
 * FOPEN_PARALLEL_DIRECT_WRITES.  The later parts the daemon uses are
 * declared here once, each mirroring include/uapi/linux/fuse.h of the
 * kernel version named beside it, and only where the installed header
 * does not have them: FUSE_DIRECT_IO_ALLOW_MMAP (7.39, Linux 6.6) and
 * FUSE over io_uring (7.42, Linux 6.14).  The values are the kernel's
 * ABI and never change.  Private to fs/.
 */
#ifndef TFS_FUSE_ABI_H
#define TFS_FUSE_ABI_H

#include <linux/fuse.h>
#include <stdint.h>

/* 7.39: shared mmap of a FOPEN_DIRECT_IO file (init flags, bit 36) */
#ifndef FUSE_DIRECT_IO_ALLOW_MMAP
#define FUSE_DIRECT_IO_ALLOW_MMAP (1ULL << 36)
#endif

/* 7.42: requests carried over io_uring (init flags, bit 41) */
#ifndef FUSE_OVER_IO_URING
#define FUSE_OVER_IO_URING (1ULL << 41)

#define FUSE_URING_IN_OUT_HEADER_SZ 128
#define FUSE_URING_OP_IN_OUT_SZ	    128

/* struct fuse_uring_ent_in_out: the entry's part of the header buffer */
struct fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id; /* the request's unique, echoed on commit */
	uint32_t payload_sz;
	uint32_t padding;
	uint64_t reserved;
};

/* struct fuse_uring_req_header: an entry's header buffer (iov[0]) */
struct fuse_uring_req_header {
	char in_out[FUSE_URING_IN_OUT_HEADER_SZ]; /* in_header / out_header */
	char op_in[FUSE_URING_OP_IN_OUT_SZ];	  /* the opcode's in_args[0] */
	struct fuse_uring_ent_in_out ring_ent_in_out;
};

/* enum fuse_uring_cmd: sqe->cmd_op */
enum fuse_uring_cmd {
	FUSE_IO_URING_CMD_INVALID = 0,
	FUSE_IO_URING_CMD_REGISTER = 1,
	FUSE_IO_URING_CMD_COMMIT_AND_FETCH = 2,
};

/* struct fuse_uring_cmd_req: in the SQE's 80-byte command area */
struct fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;
	uint8_t padding[6];
};
#endif

#endif
