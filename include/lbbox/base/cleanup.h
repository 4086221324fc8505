/* systemd-style cleanup attributes for fds, memory, FILE*, DIR*. */
#ifndef LBBOX_CLEANUP_H
#define LBBOX_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static inline void lb_freep(void *p)
{
	free(*(void **)p);
}

static inline void lb_closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void lb_fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void lb_closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

/* Frees a NULL-terminated array of strings. */
static inline void lb_strvfreep(char ***v)
{
	if (!*v)
		return;
	for (char **p = *v; *p; p++)
		free(*p);
	free(*v);
}

#define _cleanup_free_	   _cleanup_(lb_freep)
#define _cleanup_close_	   _cleanup_(lb_closep)
#define _cleanup_fclose_   _cleanup_(lb_fclosep)
#define _cleanup_closedir_ _cleanup_(lb_closedirp)
#define _cleanup_strv_	   _cleanup_(lb_strvfreep)
#define _cleanup_err_	   _cleanup_(lb_err_freep)

/* Hands ownership out of a cleanup variable. */
#define LB_TAKE_PTR(p)                                                                             \
	({                                                                                         \
		__typeof__(p) _t = (p);                                                            \
		(p) = NULL;                                                                        \
		_t;                                                                                \
	})
#define LB_TAKE_FD(fd)                                                                             \
	({                                                                                         \
		int _t = (fd);                                                                     \
		(fd) = -1;                                                                         \
		_t;                                                                                \
	})

#endif
