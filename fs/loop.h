/*
 * loop.h: part of the FUSE daemon (the adapter between the kernel's FUSE
 * requests and lib/ calls): the session loop, the threads that read
 * requests from /dev/fuse and run their handlers.  Private to fs/.
 */
#ifndef TFS_LOOP_H
#define TFS_LOOP_H

struct fuse_session;

/*
 * Serve se's requests on up to max_threads threads until the session
 * ends: an unmount, or a signal that fuse_set_signal_handlers() turned
 * into fuse_session_exit().  The calling thread only waits; every thread
 * it starts has all signals blocked.  Returns 0, or -errno when reading
 * /dev/fuse failed.  Resets the session (fuse_session_reset()) at the
 * end, as fuse_session_loop_mt() does.
 */
int tfs_loop_run(struct fuse_session *se, unsigned int max_threads);

#endif
