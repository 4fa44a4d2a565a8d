/*
 * user_kernel.c — your own OpenCL C kernel through kiln, and the binary
 * cache: the first runtime compiles the program and stores the binary in
 * a cache folder, the second loads it without compiling. The result (a
 * saxpy) is checked against the host.
 *
 *   run: ./user_kernel [CACHE_DIR]   (default: a new folder under /tmp)
 */
#include <stdio.h>
#include <stdlib.h>

#include <kiln/kiln.h>

static const char source[] =
  "kernel void saxpy(float a, global const float *x, global float *y, int n)\n"
  "{ int i = get_global_id(0); if (i < n) y[i] += a * x[i]; }\n";

enum { N = 100000 };

/* Builds and runs saxpy on a new runtime caching in dir; 0 when y is right. */
static int run(const char *dir, int round)
{
  kiln_options o;
  kiln_options_init(&o);
  o.cache_dir = dir;
  kiln_runtime *rt = NULL;
  kiln_program *p = NULL;
  kiln_kernel *k = NULL;
  kiln_buffer *x = NULL, *y = NULL;
  static float hx[N], hy[N];
  for (int i = 0; i < N; i++)
    hx[i] = (float)(i % 100), hy[i] = 1;
  kiln_status st = kiln_runtime_create(&o, &rt);
  if (st == KILN_OK)
    st = kiln_program_create(rt, source, NULL, &p);
  if (st == KILN_OK)
    st = kiln_kernel_create(p, "saxpy", &k);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, KILN_F32, N, 0, &x);
  if (st == KILN_OK)
    st = kiln_buffer_create(rt, KILN_F32, N, 0, &y);
  if (st == KILN_OK)
    st = kiln_buffer_write(x, 0, N, hx);
  if (st == KILN_OK)
    st = kiln_buffer_write(y, 0, N, hy);
  if (st == KILN_OK) /* float, buffer, buffer, int: checked against the kernel */
    st = kiln_kernel_set_args(k, "fbbi", 2.0, x, y, (int32_t)N);
  if (st == KILN_OK)
    st = kiln_kernel_launch(k, 1, (size_t[]){N}, NULL);
  if (st == KILN_OK)
    st = kiln_buffer_read(y, 0, N, hy);
  int bad = st != KILN_OK;
  if (bad)
    fprintf(stderr, "user_kernel: %s\n", kiln_last_error(rt));
  for (int i = 0; i < N && !bad; i++)
    bad = hy[i] != 1 + 2 * (float)(i % 100);
  kiln_cache_usage u;
  kiln_cache_usage_init(&u);
  kiln_cache_stats(rt, &u);
  printf("runtime %d: %llu compiled, %llu loaded from %s; saxpy %s\n", round,
         (unsigned long long)u.compiles, (unsigned long long)u.hits, dir,
         bad ? "WRONG" : "right");
  bad |= round == 2 && (u.hits != 1 || u.compiles != 0); /* the cache served it */
  kiln_buffer_destroy(x), kiln_buffer_destroy(y);
  kiln_kernel_destroy(k), kiln_program_destroy(p);
  kiln_runtime_destroy(rt);
  return bad;
}

int main(int argc, char **argv)
{
  char dir[] = "/tmp/kiln-example-XXXXXX";
  const char *where = argc > 1 ? argv[1] : mkdtemp(dir);
  if (!where) {
    perror("mkdtemp");
    return 1;
  }
  return run(where, 1) || run(where, 2);
}
