/*
 * fake-clblast-tuner.c — stands in for CLBlast's clblast_tuner_xgemm and
 * clblast_tuner_xgemm_direct (which it is built as) in
 * tests/check-tune-clblast.sh, so that `kiln tune --clblast` is tested in a
 * second instead of minutes. It takes their options, finds the device at
 * -platform/-device as they do (the ICD loader's order, every device
 * type), prints a table like theirs and writes a JSON file like theirs into
 * the current folder: three results, the fastest a parameter set CLBlast
 * 1.5.3 runs correctly on PoCL (the real tuner's, on this machine).
 *
 * FAKE_CLBLAST_TUNER makes it misbehave: "other-device" names another
 * device, "garbage" writes a file that is not JSON, "fraction" writes a
 * parameter that is not a whole number, "fail" exits 1 without a file;
 * "bad-best" adds a fastest result whose kernel does not build (a vector
 * width of 5), which kiln's check must refuse for the next one, and
 * "all-bad" makes every result so.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *arg(int argc, char **argv, const char *name, const char *dflt)
{
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], name) == 0)
      return argv[i + 1];
  return dflt;
}

/* The device's name and its platform's version, as the real tuner reads
 * them; 0, or -1 when there is no such device. */
static int device(unsigned p, unsigned d, char *name, char *version, size_t size)
{
  cl_platform_id plats[16];
  cl_device_id devs[16];
  cl_uint np = 0, nd = 0;
  if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS || p >= np ||
      clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 16, devs, &nd) != CL_SUCCESS ||
      d >= nd)
    return -1;
  return clGetDeviceInfo(devs[d], CL_DEVICE_NAME, size, name, NULL) == CL_SUCCESS &&
             clGetPlatformInfo(plats[p], CL_PLATFORM_VERSION, size, version, NULL) ==
               CL_SUCCESS
           ? 0
           : -1;
}

/* Parameters as the tuners write them (after PRECISION), best first. */
static const char *const xgemm_sets[] = {
  "\"GEMMK\": 0,\"KREG\": 1,\"KWG\": 32,\"KWI\": 2,\"MDIMA\": 8,\"MDIMC\": 8,\"MWG\": 16,"
  "\"NDIMB\": 8,\"NDIMC\": 8,\"NWG\": 32,\"SA\": 1,\"SB\": 1,"
  "\"STRM\": 0,\"STRN\": 0,\"VWM\": 1,\"VWN\": 4",
  "\"GEMMK\": 0,\"KREG\": 1,\"KWG\": 32,\"KWI\": 2,\"MDIMA\": 8,\"MDIMC\": 8,\"MWG\": 16,"
  "\"NDIMB\": 8,\"NDIMC\": 8,\"NWG\": 16,\"SA\": 0,\"SB\": 0,"
  "\"STRM\": 0,\"STRN\": 0,\"VWM\": 1,\"VWN\": 1",
};
/* A vector width of 5: the kernel does not build (no float5). */
static const char *const poisoned[] = {
  "\"GEMMK\": 0,\"KREG\": 1,\"KWG\": 32,\"KWI\": 2,\"MDIMA\": 8,\"MDIMC\": 8,\"MWG\": 16,"
  "\"NDIMB\": 8,\"NDIMC\": 8,\"NWG\": 32,\"SA\": 1,\"SB\": 1,"
  "\"STRM\": 0,\"STRN\": 0,\"VWM\": 5,\"VWN\": 4",
  "\"KWID\": 2,\"MDIMAD\": 16,\"MDIMCD\": 16,\"NDIMBD\": 8,\"NDIMCD\": 8,\"PADA\": 1,"
  "\"PADB\": 1,\"VWMD\": 5,\"VWND\": 1,\"WGD\": 32",
};
static const char *const direct_sets[] = {
  "\"KWID\": 2,\"MDIMAD\": 16,\"MDIMCD\": 16,\"NDIMBD\": 8,\"NDIMCD\": 8,\"PADA\": 1,"
  "\"PADB\": 1,\"VWMD\": 1,\"VWND\": 1,\"WGD\": 32",
  "\"KWID\": 2,\"MDIMAD\": 8,\"MDIMCD\": 8,\"NDIMBD\": 8,\"NDIMCD\": 8,\"PADA\": 1,"
  "\"PADB\": 1,\"VWMD\": 1,\"VWND\": 1,\"WGD\": 8",
};

int main(int argc, char **argv)
{
  const char *mode = getenv("FAKE_CLBLAST_TUNER");
  mode = mode ? mode : "";
  int direct = strstr(argv[0], "direct") != NULL;
  const char *bits = arg(argc, argv, "-precision", "32");
  char name[256], version[256];
  if (device((unsigned)atoi(arg(argc, argv, "-platform", "0")),
             (unsigned)atoi(arg(argc, argv, "-device", "0")), name, version,
             sizeof name) != 0) {
    fprintf(stderr, "terminate called after throwing an instance of 'clblast::Error'\n");
    return 134;
  }
  printf("* (1/1) Tuning %s (fake)\n\n", direct ? "XgemmDirect" : "Xgemm");
  /* The real table's rows, colour codes included. */
  printf("|    1 |     3 |    0   16 | 8 8 | 256 256 |   \x1b[32mOK\x1b[0m    104 ms |  "
         "   1.50 ms |   22.4 |     \x1b[32mresults match\x1b[0m |\n");
  printf("|    2 |     3 |    0   32 | 8 8 | 256 256 |   \x1b[32mOK\x1b[0m    104 ms |  "
         "   4.25 ms |    7.9 |     \x1b[32mresults match\x1b[0m |\n");
  printf("|    3 |     3 |    0   64 | 8 8 | 256 256 |   \x1b[31mcompilation error:   "
         "-11\x1b[0m     |      - |                 - | <-- skipping\n");
  if (strcmp(mode, "fail") == 0)
    return 1;
  char file[64];
  snprintf(file, sizeof file, "clblast_%s_1_%s.json", direct ? "xgemm_direct" : "xgemm",
           bits);
  FILE *f = fopen(file, "w");
  if (!f)
    return 1;
  if (strcmp(mode, "garbage") == 0) {
    fprintf(f, "{\n  \"kernel_family\": \"xgemm_1\",\n  \"results\": [\n");
    return fclose(f) != 0;
  }
  const char *kernel = direct ? "XgemmDirectTN" : "Xgemm";
  const char *const *sets = direct ? direct_sets : xgemm_sets;
  fprintf(f, "{\n  \"kernel_family\": \"%s\",\n  \"precision\": \"%s\",\n",
          direct ? "xgemm_direct_1" : "xgemm_1", bits);
  fprintf(f, "  \"best_kernel\": \"%s\",\n  \"best_time\": \"1.50\",\n", kernel);
  fprintf(f, "  \"device\": \"%s\",\n  \"platform_version\": \"%s\",\n",
          strcmp(mode, "other-device") == 0 ? "Some Other GPU" : name, version);
  fprintf(f, "  \"results\": [\n");
  int all_bad = strcmp(mode, "all-bad") == 0, bad_best = strcmp(mode, "bad-best") == 0;
  for (int r = 1; r >= 0; r--) { /* the best last: the reader must compare */
    fprintf(f, "    {\n      \"kernel\": \"%s\",\n      \"time\": %.3f,\n", kernel,
            r ? 4.25 : 1.5);
    fprintf(f, "      \"parameters\": {\"PRECISION\": %s,", bits);
    fputs(all_bad ? poisoned[direct] : sets[r], f);
    if (r == 0 && strcmp(mode, "fraction") == 0)
      fprintf(f, ",\"HALF\": 0.5");
    fprintf(f, "}\n    }%s\n", r || bad_best ? "," : "");
  }
  if (bad_best) {
    fprintf(f, "    {\n      \"kernel\": \"%s\",\n      \"time\": 1.000,\n", kernel);
    fprintf(f, "      \"parameters\": {\"PRECISION\": %s,%s}\n    }\n", bits,
            poisoned[direct]);
  }
  fprintf(f, "  ]\n}\n");
  return fclose(f) != 0;
}
