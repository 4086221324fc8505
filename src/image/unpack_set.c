/* A string set (open addressing, FNV-1a) for the paths one layer wrote. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "unpack_internal.h"

static uint64_t hash_path(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

static size_t find_slot(char **slots, size_t cap, const char *path)
{
	size_t i = hash_path(path) & (cap - 1);
	while (slots[i] && strcmp(slots[i], path) != 0)
		i = (i + 1) & (cap - 1);
	return i;
}

static int grow(struct unpack_pathset *s)
{
	size_t cap = s->cap ? s->cap * 2 : 256;
	char **slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i])
			slots[find_slot(slots, cap, s->slots[i])] = s->slots[i];
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	return 0;
}

static int add_one(struct unpack_pathset *s, const char *path, size_t len, bool *added)
{
	char *copy = strndup(path, len);
	if (!copy)
		return -1;
	if ((s->n + 1) * 4 > s->cap * 3 && grow(s) < 0) {
		free(copy);
		return -1;
	}
	size_t i = find_slot(s->slots, s->cap, copy);
	*added = !s->slots[i];
	if (*added) {
		s->slots[i] = copy;
		s->n++;
	} else {
		free(copy);
	}
	return 0;
}

int unpack_pathset_add(struct unpack_pathset *s, const char *path)
{
	size_t len = strlen(path);

	/* Walk up from the path; once an ancestor is known, all of its ancestors are too. */
	for (;;) {
		bool added = false;
		if (add_one(s, path, len, &added) < 0) {
			errno = ENOMEM;
			return -1;
		}
		if (!added || len == 0)
			return 0;
		while (len > 0 && path[len - 1] != '/')
			len--;
		if (len > 0)
			len--; /* drop the slash */
	}
}

bool unpack_pathset_has(const struct unpack_pathset *s, const char *path)
{
	if (!s->cap)
		return false;
	return s->slots[find_slot(s->slots, s->cap, path)] != NULL;
}

void unpack_pathset_free(struct unpack_pathset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->slots[i]);
	free(s->slots);
	*s = (struct unpack_pathset){0};
}
