/*
 * probe-subbuf.c — which orders of releasing OpenCL sub-buffers a driver
 * survives, in plain OpenCL, each in a child process of its own.
 *
 *   probe-subbuf [gpu|cpu|all]     (default: gpu, else whatever is there)
 *
 * NVIDIA's driver 580 on an H200 died with SIGSEGV in clReleaseMemObject()
 * of a sub-buffer whose parent was alive (../shared/gpu/h200-2026-11-28/
 * views-gdb.txt, subbuf.c): kiln__keeps_sub_buffers() in src/device/rank.c keeps
 * a view's sub-buffer on such a device until its buffer's memory goes, and
 * releases the parent first. This prints, for the first device, one line a
 * way of releasing (`survives`, or how it died), so that one call on a GPU
 * says whether that order is safe and what else is: put what it finds in
 * kiln__keeps_sub_buffers()'s comment. Built with kiln, not installed, not
 * a test (it would crash on purpose).
 */
#define _POSIX_C_SOURCE 200809L
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { PARENT_FIRST = 1, REVERSE = 2, FINISH = 4, ONE = 8, UNUSED = 16, BIG = 32 };

static const struct {
  const char *what;
  unsigned how;
} ways[] = {
  {"one sub-buffer, used, released, then its parent", ONE},
  {"one sub-buffer, never used, released, then its parent", ONE | UNUSED},
  {"two overlapping, released in creation order, then the parent", 0},
  {"two overlapping, released newest first, then the parent", REVERSE},
  {"the same after clFinish()", REVERSE | FINISH},
  {"two overlapping in a 1 MiB parent (as a pool gives), in creation order", BIG},
  {"the parent first, then the two in creation order", PARENT_FIRST},
  {"the parent first, then the two newest first (kiln's order)", PARENT_FIRST | REVERSE},
  {"the parent first after clFinish(), newest first", PARENT_FIRST | REVERSE | FINISH},
};

#define CK(call)                                                                         \
  do {                                                                                   \
    cl_int e_ = (call);                                                                  \
    if (e_ != CL_SUCCESS) {                                                              \
      fprintf(stderr, "%s: error %d\n", #call, e_);                                      \
      exit(2);                                                                           \
    }                                                                                    \
  } while (0)

/* The test_buffer_views sequence of subbuf.c, then the releases of `how`. */
static void run(cl_device_id d, unsigned how)
{
  cl_uint bits = 0;
  CK(clGetDeviceInfo(d, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits, NULL));
  size_t at = bits / 8 / sizeof(float), n = 4 * at + 5;
  size_t bytes = how & BIG ? (size_t)1 << 20 : n * sizeof(float);
  cl_int e;
  cl_context c = clCreateContext(NULL, 1, &d, NULL, NULL, &e);
  CK(e);
  cl_command_queue q = clCreateCommandQueue(c, d, 0, &e);
  CK(e);
  float *h = calloc(n, sizeof *h), three[3] = {-1, -2, -3}, seven = 7;
  cl_mem b = clCreateBuffer(c, CL_MEM_READ_WRITE, bytes, NULL, &e);
  CK(e);
  CK(clEnqueueWriteBuffer(q, b, CL_TRUE, 0, n * sizeof *h, h, 0, NULL, NULL));
  cl_buffer_region r1 = {at * 4, (2 * at + 3) * 4}, r2 = {2 * at * 4, 12};
  cl_mem v =
    clCreateSubBuffer(b, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r1, &e);
  CK(e);
  cl_mem vv = NULL;
  if (!(how & UNUSED))
    CK(clEnqueueReadBuffer(q, v, CL_TRUE, 0, r1.size, h, 0, NULL, NULL));
  if (!(how & ONE)) {
    vv = clCreateSubBuffer(b, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r2, &e);
    CK(e);
    CK(clEnqueueWriteBuffer(q, vv, CL_TRUE, 0, 12, three, 0, NULL, NULL));
    CK(clEnqueueFillBuffer(q, b, &seven, 4, (2 * at + 1) * 4, 4, 0, NULL, NULL));
    CK(clEnqueueReadBuffer(q, vv, CL_TRUE, 0, 12, three, 0, NULL, NULL));
  }
  if (how & FINISH)
    CK(clFinish(q));
  cl_mem order[3] = {b, v, vv};
  if (!(how & PARENT_FIRST))
    order[0] = v, order[1] = vv, order[2] = b;
  if (how & REVERSE) { /* the sub-buffers newest first */
    int i = how & PARENT_FIRST ? 1 : 0;
    cl_mem t = order[i];
    order[i] = order[i + 1], order[i + 1] = t;
  }
  for (int i = 0; i < 3; i++)
    if (order[i])
      CK(clReleaseMemObject(order[i]));
  CK(clFinish(q));
  CK(clReleaseCommandQueue(q));
  CK(clReleaseContext(c));
  free(h);
  exit(0);
}

static cl_device_id pick(const char *want)
{
  cl_platform_id p[16];
  cl_uint np = 0;
  if (clGetPlatformIDs(16, p, &np) != CL_SUCCESS)
    return NULL;
  cl_device_type types[2] = {CL_DEVICE_TYPE_GPU, CL_DEVICE_TYPE_ALL};
  if (!strcmp(want, "cpu"))
    types[0] = types[1] = CL_DEVICE_TYPE_CPU;
  else if (!strcmp(want, "all"))
    types[0] = CL_DEVICE_TYPE_ALL;
  for (int t = 0; t < 2; t++)
    for (cl_uint i = 0; i < np && i < 16; i++) {
      cl_device_id d;
      if (clGetDeviceIDs(p[i], types[t], 1, &d, NULL) == CL_SUCCESS)
        return d;
    }
  return NULL;
}

/* The child's part: OpenCL is first touched there, after the fork (a
 * driver may not survive a fork after its start). w < 0: the device's name. */
static void child(const char *want, int w)
{
  alarm(30);
  cl_device_id d = pick(want);
  if (!d) {
    fprintf(stderr, "probe-subbuf: no OpenCL device (%s)\n", want);
    exit(2);
  }
  if (w < 0) {
    char name[256] = "", driver[256] = "";
    clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL);
    clGetDeviceInfo(d, CL_DRIVER_VERSION, sizeof driver, driver, NULL);
    printf("device: %s, driver %s\n", name, driver);
    exit(0);
  }
  run(d, ways[w].how); /* exits */
}

int main(int argc, char **argv)
{
  const char *want = argc > 1 ? argv[1] : "gpu";
  int died = 0;
  for (int w = -1; w < (int)(sizeof ways / sizeof ways[0]); w++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0)
      child(want, w);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) != pid) {
      perror("probe-subbuf: fork");
      return 1;
    }
    if (w < 0) {
      if (!WIFEXITED(status) || WEXITSTATUS(status))
        return 1;
      continue;
    }
    char how[64] = "survives";
    if (WIFSIGNALED(status))
      snprintf(how, sizeof how, "dies of signal %d (%s)", WTERMSIG(status),
               strsignal(WTERMSIG(status)));
    else if (WEXITSTATUS(status))
      snprintf(how, sizeof how, "fails (an OpenCL call: see above)");
    died |= strcmp(how, "survives") != 0;
    printf("%-9s %s\n", how, ways[w].what);
  }
  return died ? 3 : 0;
}
