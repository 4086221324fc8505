/* The image verbs as a podman user types them: short names are localhost/ ones, NAME@DIGEST and
 * short image IDs, `images` columns and options, inspect's podman field names, the `image`
 * aliases, rmi's refusals, and load from stdin. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

LBT_SUITE(image_cli);

static void run_ok(struct lb_run_out *o, const char *const *args)
{
	lbt_runv(o, args);
	LBT_ASSERT_EXIT(*o, 0);
}

/* What `run --image ref` prints (the images here echo who they are). */
static char *run_image(const char *ref)
{
	struct lb_run_out o;
	run_ok(&o, (const char *[]){"run", "--image", ref, NULL});
	char *out = strdup(o.out);
	lbt_out_free(&o);
	return out;
}

/*
 * A tiny OCI layout written by Python: images named localhost/NAME:<i> over one 10240-byte tar
 * layer (one file), each config with a label and "created" DAYS days ago. COUNT images, or with
 * COUNT "amb" as many as it takes until two image IDs share their first 3 hex digits; that
 * prefix is written to DEST/prefix.
 */
static const char gen_py[] =
    "import gzip, hashlib, io, json, os, sys, tarfile, time\n"
    "dest, name, count, days = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])\n"
    "os.makedirs(dest + '/blobs/sha256')\n"
    "def blob(b):\n"
    "    d = hashlib.sha256(b).hexdigest()\n"
    "    open(dest + '/blobs/sha256/' + d, 'wb').write(b)\n"
    "    return {'digest': 'sha256:' + d, 'size': len(b)}\n"
    "buf = io.BytesIO()\n"
    "with tarfile.open(fileobj=buf, mode='w', format=tarfile.USTAR_FORMAT) as t:\n"
    "    ti = tarfile.TarInfo('hello'); data = b'hello\\n'; ti.size = len(data); ti.mtime = 1\n"
    "    t.addfile(ti, io.BytesIO(data))\n"
    "tar = buf.getvalue()\n"
    "layer = blob(gzip.compress(tar, mtime=0))\n"
    "created = time.strftime('%Y-%m-%dT%H:%M:%S.5Z', time.gmtime(time.time() - days * 86400 - 60))\n"
    "seen, index, i = {}, [], 0\n"
    "while True:\n"
    "    cfg = {'architecture': 'amd64', 'os': 'linux', 'created': created,\n"
    "           'config': {'Cmd': ['/hello'], 'Labels': {'lbt.n': str(i)}},\n"
    "           'rootfs': {'type': 'layers', 'diff_ids': ['sha256:' + hashlib.sha256(tar).hexdigest()]}}\n"
    "    c = blob(json.dumps(cfg).encode())\n"
    "    m = {'schemaVersion': 2, 'mediaType': 'application/vnd.oci.image.manifest.v1+json',\n"
    "         'config': dict(mediaType='application/vnd.oci.image.config.v1+json', **c),\n"
    "         'layers': [dict(mediaType='application/vnd.oci.image.layer.v1.tar+gzip', **layer)]}\n"
    "    index.append(dict(mediaType='application/vnd.oci.image.manifest.v1+json',\n"
    "                      annotations={'org.opencontainers.image.ref.name': 'localhost/%s:%d' % (name, i)},\n"
    "                      **blob(json.dumps(m).encode())))\n"
    "    p = c['digest'][7:10]\n"
    "    i += 1\n"
    "    if count == 'amb' and p in seen:\n"
    "        open(dest + '/prefix', 'w').write(p)\n"
    "        break\n"
    "    seen[p] = 1\n"
    "    if count != 'amb' and i == int(count):\n"
    "        break\n"
    "json.dump({'schemaVersion': 2, 'manifests': index}, open(dest + '/index.json', 'w'))\n"
    "open(dest + '/oci-layout', 'w').write('{\"imageLayoutVersion\":\"1.0.0\"}')\n";

static char *gen_layout(const char *name, const char *count, int days)
{
	char *dir = lbt_strdupf("%s/gen-%d", lbt_workdir(), rand());
	char d[16];
	snprintf(d, sizeof(d), "%d", days);
	const char *argv[] = {"python3", "-c", gen_py, dir, name, count, d, NULL};
	cr_assert_eq(lbt_system(argv), 0, "the layout generator failed");
	return dir;
}

/* Column i (0-based, split on runs of 2+ spaces) of the line of `images` output starting with
 * repo; NULL when there is no such line. */
static char *column(const char *out, const char *repo, int i)
{
	char *copy = strdup(out), *save = NULL, *res = NULL;
	for (char *line = strtok_r(copy, "\n", &save); line && !res;
	     line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, repo, strlen(repo)) || line[strlen(repo)] != ' ')
			continue;
		char *p = line;
		for (int k = 0; k < i && p; k++) {
			p = strstr(p, "  ");
			p = p ? p + strspn(p, " ") : NULL;
		}
		if (p)
			res =
			    strndup(p, strstr(p, "  ") ? (size_t)(strstr(p, "  ") - p) : strlen(p));
	}
	free(copy);
	return res;
}

/* `lbbox tag X mydemo` names it localhost/mydemo:latest; a short name is looked up as
 * localhost/NAME first, then docker.io/library/NAME. */
LBT_TEST(image_cli, short_names_are_local_first)
{
	struct lb_run_out o;
	char *a = lbt_oci_layout(NULL, "localhost/lbt-a:1", "/bin/echo local"),
	     *b = lbt_oci_layout(NULL, "localhost/lbt-b:1", "/bin/echo hub");
	lbt_load_layout(a), lbt_load_layout(b);
	run_ok(&o, (const char *[]){"tag", "localhost/lbt-a:1", "mydemo", NULL});
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"images", NULL});
	char *tag = column(o.out, "localhost/mydemo", 1);
	cr_assert(tag && !strcmp(tag, "latest"), "no localhost/mydemo latest row: %s", o.out);
	cr_assert_null(strstr(o.out, "docker.io/library/mydemo"), "%s", o.out);
	free(tag);
	lbt_out_free(&o);
	char *out = run_image("mydemo");
	cr_assert_str_eq(out, "local\n");
	free(out);

	run_ok(&o,
	       (const char *[]){"tag", "localhost/lbt-b:1", "docker.io/library/lbtshort:1", NULL});
	lbt_out_free(&o);
	out = run_image("lbtshort:1");
	cr_assert_str_eq(out, "hub\n", "docker.io's image when there is no local one");
	free(out);
	run_ok(&o, (const char *[]){"tag", "lbt-a:1", "lbtshort:1", NULL});
	lbt_out_free(&o);
	out = run_image("lbtshort:1");
	cr_assert_str_eq(out, "local\n", "localhost/ before docker.io");
	free(out);
	out = run_image("docker.io/library/lbtshort:1");
	cr_assert_str_eq(out, "hub\n", "a full name means exactly that image");
	free(out);
	free(a), free(b);
}

/* An OCI layout whose ref.name is only a tag: the tag of an image named after the layout. */
LBT_TEST(image_cli, oci_tag_only_ref_name_is_a_tag)
{
	struct lb_run_out o;
	char *dir = lbt_strdupf("%s/myapp", lbt_workdir());
	char *sh = lbt_strdupf("%s/rootfs-tools/oci-layout.sh '%s' '%s' v2 /bin/echo v2-ran",
			       LBBOX_SOURCE_DIR, lbt_rootfs(), dir);
	cr_assert_eq(system(sh), 0);
	run_ok(&o, (const char *[]){"load", "--oci-dir", dir, NULL});
	LBT_ASSERT_OUT(o, "Loaded image: localhost/myapp:v2\n");
	lbt_out_free(&o);
	char *out = run_image("myapp:v2");
	cr_assert_str_eq(out, "v2-ran\n");
	free(out), free(sh), free(dir);
}

/* NAME@sha256:DIGEST and short image IDs, as podman takes them. */
LBT_TEST(image_cli, digest_references_and_short_ids)
{
	struct lb_run_out o;
	char *a = lbt_oci_layout(NULL, "localhost/lbt-a:1", "/bin/echo by-ref");
	lbt_load_layout(a);
	run_ok(&o, (const char *[]){"images", "--digests", NULL});
	char *digest = column(o.out, "localhost/lbt-a", 2);
	char *id = column(o.out, "localhost/lbt-a", 3);
	lbt_out_free(&o);
	cr_assert(digest && !strncmp(digest, "sha256:", 7) && strlen(digest) == 71, "%s", digest);
	cr_assert(id && strlen(id) == 12, "IMAGE ID %s", id);

	char *ref = lbt_strdupf("localhost/lbt-a@%s", digest);
	char *out = run_image(ref);
	cr_assert_str_eq(out, "by-ref\n");
	free(out), free(ref);
	ref = lbt_strdupf("lbt-a@%s", digest); /* short: localhost/lbt-a */
	out = run_image(ref);
	cr_assert_str_eq(out, "by-ref\n");
	free(out), free(ref);
	ref = lbt_strdupf("localhost/lbt-other@%s", digest);
	lbt_run(&o, "run", "--image", ref, NULL);
	lbt_assert_error_line(&o, 125, "not found");
	lbt_out_free(&o), free(ref);

	char id3[4] = {id[0], id[1], id[2], 0}, id2[3] = {id[0], id[1], 0};
	out = run_image(id3);
	cr_assert_str_eq(out, "by-ref\n");
	free(out);
	run_ok(&o, (const char *[]){"inspect", id, NULL});
	json_t *j = lbt_json(o.out);
	cr_assert(!strncmp(json_string_value(json_object_get(json_array_get(j, 0), "Id")), id, 12));
	json_decref(j);
	lbt_out_free(&o);
	lbt_run(&o, "run", "--pull", "never", "--image", id2, NULL); /* a short name: no pull */
	lbt_assert_error_line(&o, 125, "not found");
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"images", "-q", NULL});
	char *want = lbt_strdupf("%s\n", id);
	LBT_ASSERT_OUT(o, want);
	lbt_out_free(&o);
	free(want), free(id), free(digest), free(a);
}

LBT_TEST(image_cli, ambiguous_id_prefix_says_so)
{
	struct lb_run_out o;
	char *dir = gen_layout("lbt-amb", "amb", 1);
	lbt_load_layout(dir);
	char *pfile = lbt_strdupf("%s/prefix", dir);
	char *prefix = lbt_read_file(pfile);
	lbt_run(&o, "inspect", prefix, NULL);
	lbt_assert_error_line(&o, 125, "ambiguous");
	lbt_out_free(&o);
	lbt_run(&o, "rmi", prefix, NULL);
	lbt_assert_error_line(&o, 125, "ambiguous");
	lbt_out_free(&o);
	free(prefix), free(pfile), free(dir);
}

/* REPOSITORY TAG IMAGE ID CREATED SIZE, SIZE being the layers uncompressed; -q, --json, and the
 * directory images. */
LBT_TEST(image_cli, images_columns_and_options)
{
	struct lb_run_out o;
	char *dir = gen_layout("lbt-cols", "1", 3);
	lbt_load_layout(dir);
	char *rootfs = lbt_strdupf("%s/images/lbtdir/rootfs", lbt_root());
	char *mk = lbt_strdupf("mkdir -p %s && head -c 5000 /dev/zero > %s/f", rootfs, rootfs);
	cr_assert_eq(system(mk), 0);
	run_ok(&o, (const char *[]){"images", NULL});
	cr_assert(!strncmp(o.out, "REPOSITORY", 10) && strstr(o.out, "  TAG  ") &&
		      strstr(o.out, "  IMAGE ID  ") && strstr(o.out, "  CREATED  ") &&
		      strstr(o.out, "  SIZE\n"),
		  "header: %s", o.out);
	char *tag = column(o.out, "localhost/lbt-cols", 1);
	char *created = column(o.out, "localhost/lbt-cols", 3);
	char *size = column(o.out, "localhost/lbt-cols", 4);
	cr_assert_str_eq(tag, "0");
	cr_assert_str_eq(created, "3 days ago");
	/* one 10240-byte tar layer (about 150 bytes compressed) */
	cr_assert_str_eq(size, "10.2 kB");
	char *dtag = column(o.out, "lbtdir", 1), *dsize = column(o.out, "lbtdir", 4);
	cr_assert(dtag && !strcmp(dtag, "<dir>"), "directory image row: %s", o.out);
	cr_assert_str_eq(dsize, "5 kB");
	lbt_out_free(&o);

	run_ok(&o, (const char *[]){"images", "--json", NULL});
	json_t *j = lbt_json(o.out), *img = json_array_get(j, 0);
	cr_assert_eq(json_integer_value(json_object_get(img, "Size")), 10240);
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(img, "RepoTags"), 0)),
			 "localhost/lbt-cols:0");
	cr_assert_eq(strlen(json_string_value(json_object_get(img, "Id"))), 64);
	json_decref(j);
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"image", "ls", "-q", NULL});
	cr_assert_eq(lbt_count_lines(o.out), 1, "-q: %s", o.out);
	cr_assert_eq(strlen(o.out), 13, "-q: %s", o.out);
	lbt_out_free(&o);
	free(tag), free(created), free(size), free(dtag), free(dsize), free(mk), free(rootfs);
	free(dir);
}

LBT_TEST(image_cli, inspect_has_podman_fields)
{
	struct lb_run_out o;
	char *dir = gen_layout("lbt-insp", "1", 3);
	lbt_load_layout(dir);
	run_ok(&o, (const char *[]){"image", "inspect", "lbt-insp:0", NULL});
	json_t *j = lbt_json(o.out), *img = json_array_get(j, 0);
	cr_assert_eq(json_array_size(j), 1);
	cr_assert_eq(strlen(json_string_value(json_object_get(img, "Id"))), 64);
	cr_assert(!strncmp(json_string_value(json_object_get(img, "Digest")), "sha256:", 7));
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(img, "RepoTags"), 0)),
			 "localhost/lbt-insp:0");
	cr_assert(strstr(json_string_value(json_object_get(img, "Created")), "T"));
	cr_assert_eq(json_integer_value(json_object_get(img, "Size")), 10240);
	cr_assert_str_eq(json_string_value(json_object_get(img, "Architecture")), "amd64");
	cr_assert_str_eq(json_string_value(json_object_get(img, "Os")), "linux");
	json_t *cfg = json_object_get(img, "Config");
	cr_assert_str_eq(json_string_value(json_array_get(json_object_get(cfg, "Cmd"), 0)),
			 "/hello");
	cr_assert(json_is_null(json_object_get(cfg, "Entrypoint")));
	cr_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(cfg, "Labels"), "lbt.n")), "0");
	cr_assert_str_eq(
	    json_string_value(json_object_get(json_object_get(img, "Labels"), "lbt.n")), "0");
	json_t *rootfs = json_object_get(img, "RootFS");
	cr_assert_str_eq(json_string_value(json_object_get(rootfs, "Type")), "layers");
	cr_assert_eq(json_array_size(json_object_get(rootfs, "Layers")), 1);
	json_decref(j);
	lbt_out_free(&o);
	lbt_run(&o, "inspect", "lbt-nosuch", NULL);
	lbt_assert_error_line(&o, 125, "not found");
	lbt_out_free(&o);
	free(dir);
}

/* podman's `image` subcommands, and rmi's one-line refusals. */
LBT_TEST(image_cli, image_aliases_and_rmi)
{
	struct lb_run_out o;
	char *dir = gen_layout("lbt-al", "1", 0);
	run_ok(&o, (const char *[]){"image", "load", "--oci-dir", dir, NULL});
	LBT_ASSERT_OUT(o, "Loaded image: localhost/lbt-al:0\n");
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"image", "tag", "lbt-al:0", "lbt-al2", NULL});
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"image", "list", NULL});
	cr_assert(strstr(o.out, "localhost/lbt-al2"), "%s", o.out);
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"images", "-q", NULL});
	char *id = lbt_chomp(strdup(o.out));
	lbt_out_free(&o);
	lbt_run(&o, "rmi", id, NULL);
	lbt_assert_error_line(&o, 125, "has 2 names");
	lbt_out_free(&o);
	lbt_run(&o, "image", "rm", "lbt-nosuch", NULL);
	lbt_assert_error_line(&o, 125, "image 'lbt-nosuch' not found");
	lbt_out_free(&o);
	lbt_run(&o, "image", "frobnicate", NULL);
	lbt_assert_error_line(&o, 125, "unknown subcommand 'frobnicate'");
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"image", "rm", "lbt-al2", NULL});
	LBT_ASSERT_OUT(o, "Untagged: localhost/lbt-al2:latest\n");
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"image", "rm", id, NULL});
	char *want = lbt_strdupf("Untagged: localhost/lbt-al:0\nDeleted: %s", id);
	cr_assert(!strncmp(o.out, want, strlen(want)), "%s", o.out);
	lbt_out_free(&o);
	run_ok(&o, (const char *[]){"image", "prune", NULL});
	cr_assert(strstr(o.out, "Removed 3 blobs"), "%s", o.out);
	lbt_out_free(&o);
	free(want), free(id), free(dir);
}

/* `lbbox load < file` and `load -i -`; never from a terminal. */
static int sh(const char *cmd, char **out)
{
	char *full = lbt_strdupf("(%s) > %s/sh.out 2>&1", cmd, lbt_workdir());
	int st = system(full);
	char *path = lbt_strdupf("%s/sh.out", lbt_workdir());
	*out = lbt_read_file(path);
	free(full), free(path);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

LBT_TEST(image_cli, load_from_stdin)
{
	char *out = NULL;
	char *dir = gen_layout("lbt-in", "1", 0);
	char *tar = lbt_strdupf("%s/in.tar", lbt_workdir());
	char *lb = lbt_strdupf("%s --root %s --runroot %s", lbt_bin(), lbt_root(), lbt_runroot());
	char *cmd = lbt_strdupf("tar -C %s -cf %s oci-layout index.json blobs", dir, tar);
	cr_assert_eq(system(cmd), 0);
	free(cmd);

	cmd = lbt_strdupf("%s load -q < %s", lb, tar);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert_str_eq(out, "Loaded image: localhost/lbt-in:0\n");
	free(cmd), free(out);
	cmd = lbt_strdupf("%s rmi lbt-in:0 && cat %s | %s load -i -", lb, tar, lb);
	cr_assert_eq(sh(cmd, &out), 0, "%s", out);
	cr_assert(strstr(out, "Loaded image: localhost/lbt-in:0\n"), "%s", out);
	free(cmd), free(out);
	/* a terminal on stdin: refused, one line (script gives lbbox a pty) */
	cmd = lbt_strdupf("script -qec '%s load' /dev/null < /dev/null", lb);
	cr_assert_eq(sh(cmd, &out), 125, "%s", out);
	cr_assert(strstr(out, "lbbox: load: no input") && lbt_count_lines(out) == 1, "%s", out);
	free(cmd), free(out);
	cmd = lbt_strdupf("script -qec '%s load -i -' /dev/null < /dev/null", lb);
	cr_assert_eq(sh(cmd, &out), 125, "%s", out);
	cr_assert(strstr(out, "from a terminal") && lbt_count_lines(out) == 1, "%s", out);
	free(cmd), free(out);
	free(lb), free(tar), free(dir);
}
