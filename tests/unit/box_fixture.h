/*
 * The fixture of the Box index suites: a Box runtime whose runroot is a fresh directory in
 * /dev/shm, removed after each test.
 */
#ifndef LBBOX_TESTS_BOX_FIXTURE_H
#define LBBOX_TESTS_BOX_FIXTURE_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "box/box_internal.h"
#include "lbbox/base/util.h"

static char tmp[64];
static struct lb_box box;

static void box_fixture_setup(const char *name)
{
	struct lb_paths paths = {.root = "/nonexistent", .runroot = tmp};
	snprintf(tmp, sizeof(tmp), "/dev/shm/lbbox-unit-%s.XXXXXX", name);
	cr_assert_not_null(mkdtemp(tmp));
	cr_assert_eq(lb_box_init(&box, &paths, "unit", NULL), 0);
	cr_assert_eq(lb_mkdir_p(box.dir, 0700, NULL), 0);
}

static void teardown(void)
{
	lb_box_fini(&box);
	lb_rm_rf(tmp, NULL);
}

#endif
