// SPDX-License-Identifier: MIT
/* Weight sources: files beneath model_dir (GGUF, safetensors), buffers. */
#include "wload.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "model.h"
#include "model/wdesc.h"

/* The path beneath dir, never outside it (symlinks and ".." included). */
static int open_beneath(const char *dir, const char *path)
{
	struct open_how how = {
		.flags = O_RDONLY | O_CLOEXEC,
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
	};
	size_t dl = strlen(dir);
	int dfd, fd;

	if (!*dir)
		return -EACCES;
	/* An absolute path names a file under dir by its full name. */
	if (path[0] == '/') {
		while (dl > 1 && dir[dl - 1] == '/')
			dl--;
		if (strncmp(path, dir, dl) || (path[dl] != '/' && dl > 1))
			return -EACCES;
		path += dl;
		while (*path == '/')
			path++;
	}
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0)
		fd = errno == EXDEV ? -EACCES : -errno;
	close(dfd);
	return fd;
}

static int build(const uint8_t *img, size_t len, struct shxd_tfile *tf,
		 enum shxk_type q, bool hf, const struct shxd_pool *pool,
		 struct shxd_wset **out, char *err, size_t errlen)
{
	struct shxd_wsrc src = {
		.img = img, .len = len, .tf = tf, .quantize = q,
		.rename_hf = hf,
	};

	return shxd_wset_build(&src, pool, out, err, errlen);
}

/*
 * The set of a file: the tensors of a registered set of the same file
 * converted the same way (*f) if there is one, else built from img.
 */
static int build_file(const uint8_t *img, size_t len, struct shxd_tfile *tf,
		      const struct shxd_wfile *f, bool hf,
		      const struct shxd_pool *pool, struct shxd_wset **out,
		      char *err, size_t errlen)
{
	struct shxd_wset *root = shxd_wreg_find_file(f);
	int ret;

	if (root)
		return shxd_wset_share(root, out);
	ret = build(img, len, tf, f->quantize, hf, pool, out, err, errlen);
	if (!ret)
		(*out)->file = *f;
	return ret;
}

/* A GGUF file's model: hyperparameters first (a wrong file fails before
 * any weight is converted), then the set, then each layer's tensors. */
static int build_model(const uint8_t *img, size_t len, struct shxd_tfile *tf,
		       const struct shxd_wfile *f, const struct shxd_pool *pool,
		       struct shxd_wset **out, char *err, size_t errlen)
{
	struct shxd_model hp;
	int ret = shxd_model_hparams(tf, &hp, err, errlen);

	if (!ret)
		ret = build_file(img, len, tf, f, false, pool, out, err,
				 errlen);
	if (ret)
		return ret;
	ret = shxd_model_bind(*out, &hp, err, errlen);
	if (ret) {
		shxd_wset_put(*out);
		*out = NULL;
	}
	return ret;
}

static int load_file(const char *model_dir, const char *path,
		     enum shxk_type quantize, bool model,
		     const struct shxd_pool *pool, struct shxd_wset **out,
		     char *err, size_t errlen)
{
	struct shxd_tfile tf;
	struct stat st;
	uint8_t *img;
	bool gguf;
	int fd, ret;

	*err = '\0';
	fd = open_beneath(model_dir, path);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s%s", path, strerror(-fd),
			 fd == -EACCES ? " (not beneath model_dir)" : "");
		return fd;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size < 8) {
		snprintf(err, errlen, "%s: not a weights file", path);
		close(fd);
		return -EINVAL;
	}
	img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (img == MAP_FAILED) {
		ret = -errno;
		snprintf(err, errlen, "%s: mmap: %s", path, strerror(-ret));
		return ret;
	}
	gguf = !memcmp(img, "GGUF", 4);
	if (model && !gguf) {
		snprintf(err, errlen, "%s: a model must be a GGUF file", path);
		munmap(img, (size_t)st.st_size);
		return -EINVAL;
	}
	ret = gguf ? shxd_gguf_parse(img, (size_t)st.st_size, &tf, err, errlen) :
		     shxd_safetensors_parse(img, (size_t)st.st_size, &tf, err,
					    errlen);
	if (!ret) {
		/* WEIGHTS_LOAD uses a GGUF's weights as they are and
		 * quantizes safetensors only; a model honours quantize. */
		struct shxd_wfile f = {
			.dev = st.st_dev, .ino = st.st_ino,
			.size = (uint64_t)st.st_size,
			.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
				    st.st_mtim.tv_nsec,
			.quantize = gguf && !model ? SHXK_F32 : quantize,
		};

		ret = model ? build_model(img, (size_t)st.st_size, &tf, &f,
					  pool, out, err, errlen) :
			      build_file(img, (size_t)st.st_size, &tf, &f,
					 !gguf, pool, out, err, errlen);
		shxd_tfile_free(&tf);
	}
	munmap(img, (size_t)st.st_size);
	return ret;
}

int shxd_wload_file(const char *model_dir, const char *path,
		    enum shxk_type quantize, const struct shxd_pool *pool,
		    struct shxd_wset **out, char *err, size_t errlen)
{
	return load_file(model_dir, path, quantize, false, pool, out, err,
			 errlen);
}

int shxd_wload_model(const char *model_dir, const char *path,
		     enum shxk_type quantize, const struct shxd_pool *pool,
		     struct shxd_wset **out, char *err, size_t errlen)
{
	return load_file(model_dir, path, quantize, true, pool, out, err,
			 errlen);
}

int shxd_wload_buffer(const uint8_t *img, size_t len, enum shxk_type quantize,
		      const struct shxd_pool *pool, struct shxd_wset **out,
		      char *err, size_t errlen)
{
	struct shxd_tfile tf;
	int ret;

	*err = '\0';
	ret = shxd_wdesc_parse(img, len, &tf, err, errlen);
	if (ret)
		return ret;
	ret = build(img, len, &tf, quantize, false, pool, out, err, errlen);
	shxd_tfile_free(&tf);
	return ret;
}
