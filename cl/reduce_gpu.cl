/*
 * reduce_gpu.cl — the GPU shape of the whole-buffer reductions (and of
 * contiguous rows, side by side in dimension 1): stage 1 a partial per
 * work-group, read by coalesced grid-stride loads of 16-byte vectors and
 * combined by a local-memory tree (docs/reduce.md); stage 2 one group that
 * merges the partials with the same tree. Named kiln_reduce_<family>_groups
 * and _merge. cl/reduce_common.cl, read before this file in each pass,
 * holds what it shares with cl/reduce.cl.
 */
#ifndef KILN_PRELUDE
#error "cl/reduce_gpu.cl is read after cl/prelude.cl, once per variant: build it through kiln (KILN_CL_DIR), not alone"
#endif

#if KILN_PASS == 1
/* The GPU shape's view of n elements from offset off: `head` elements up to
 * the first 16-byte boundary (a buffer starts on one), `nv` whole 16-byte
 * vectors of gv elements, and the scalar tail from `tail` to n. Work-item g
 * of gs reads vectors g, g + gs, ...: neighbours read neighbouring vectors,
 * each a single 16-byte load. */
typedef struct {
  ulong head, nv, tail;
} span;

inline span span_of(ulong off, ulong n, ulong gv)
{
  span s;
  s.head = min(n, (gv - off % gv) % gv);
  s.nv = (n - s.head) / gv;
  s.tail = s.head + s.nv * gv;
  return s;
}

/* Combines a group's WG values in local memory, pairs at distance w for w
 * = WG/2 ... 1: `step` merges entry l + w into entry l. Entry 0 holds the
 * result for work-item 0 (which did the last step) alone. No sub-groups:
 * NVIDIA's OpenCL has no cl_khr_subgroups, and the tree runs once a group
 * after thousands of loads. */
#define TREE(l, step)                                                          \
  for (uint w = WG / 2; w > 0; w /= 2) {                                       \
    barrier(CLK_LOCAL_MEM_FENCE);                                              \
    if ((l) < w)                                                               \
      step;                                                                    \
  }

/* The GPU shape runs rows of a view side by side (dimension 1, a row of
 * groups each): group (g, row)'s partial, and the row a stage 2 group
 * merges. */
inline size_t slot(void)
{
  return get_group_id(1) * get_num_groups(0) + get_group_id(0);
}

/* The loads of the GPU shape's stage 1 in flight at once, a work-item. */
#define GU 4
#endif

#ifdef V

/* ---- sums ------------------------------------------------------------------ */
#if SUMS

/* Stage 1, GPU: group g's work-items sum their grid-stride share of 16-byte
 * vectors, GU loads in flight, each lane its own accumulator (Kahan lanes
 * without fp64), then the scalar head and tail, then the group's tree. */
#define ACCV CAT(ACC, GA)
#define TO_ACCV CAT(convert_, ACCV)
#define VTERM(v, mode) ((mode) == 2 ? (v) * (v) : (v))
/* GA accumulator lanes: a half8 adds as two halves, as a double8 would
 * cross builtins' calls (above). */
#if GV > 4
#define GA 4
#define ADDV(s, c, v, mode)                                                    \
  do {                                                                         \
    ACCV lo_ = TO_ACCV((v).lo), hi_ = TO_ACCV((v).hi);                         \
    VKADD(s, c, VTERM(lo_, mode));                                             \
    VKADD(s, c, VTERM(hi_, mode));                                             \
  } while (0)
#else
#define GA GV
#define ADDV(s, c, v, mode)                                                    \
  do {                                                                         \
    ACCV a_ = TO_ACCV(v);                                                      \
    VKADD(s, c, VTERM(a_, mode));                                              \
  } while (0)
#endif
#ifdef KILN_HAS_FP64
#define VKADD(s, c, v) ((s) += (v))
#else
#define VKADD(s, c, v)                                                         \
  do {                                                                         \
    ACCV y_ = (v) - (c), t_ = (s) + y_;                                        \
    (c) = select((ACCV)0, (t_ - (s)) - y_, isfinite(t_));                      \
    (s) = t_;                                                                  \
  } while (0)
#endif
#if KILN_BUILDS(kiln_reduce_sum_groups)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_sum_groups)(global const ST *x, ulong off, ulong n, ulong chunk,
                             int mode, global ACC *partial)
{
  local ACC part[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const ST *p = x + off, *a = p + sp.head;
  ACCV s = 0, c = 0;
  (void)chunk;
  for (; i + (GU - 1) * gs < sp.nv; i += GU * gs) {
    GVT v0 = GLOAD(a, i), v1 = GLOAD(a, i + gs), v2 = GLOAD(a, i + 2 * gs),
        v3 = GLOAD(a, i + 3 * gs);
    ADDV(s, c, v0, mode);
    ADDV(s, c, v1, mode);
    ADDV(s, c, v2, mode);
    ADDV(s, c, v3, mode);
  }
  for (; i < sp.nv; i += gs) {
    GVT v = GLOAD(a, i);
    ADDV(s, c, v, mode);
  }
  (void)c;
  ACC lane[GA];
  CAT(vstore, GA)(s, 0, lane);
  ksum k = {0, 0};
  for (int j = 0; j < GA; j++)
    k = kadd(k, lane[j]);
  for (ulong j = g; j < sp.head; j += gs)
    k = kadd(k, TERM(LOAD(V, p, j), mode));
  for (ulong j = sp.tail + g; j < n; j += gs)
    k = kadd(k, TERM(LOAD(V, p, j), mode));
  part[l] = k.s;
  TREE(l, part[l] += part[l + w])
  if (l == 0)
    partial[slot()] = part[0];
}
#endif

/* Stage 2, GPU: one group adds the partials, each work-item every WG-th,
 * then the tree; mean or norm. */
#if KILN_BUILDS(kiln_reduce_sum_merge)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_sum_merge)(global const ACC *partial, ulong np, ulong n, int mode,
                            global OT *out, ulong out_off)
{
  local ACC part[WG];
  uint l = get_local_id(0);
  ksum k = {0, 0};
  partial += get_group_id(1) * np; /* the row */
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    k = kadd(k, partial[i]);
  part[l] = k.s;
  TREE(l, part[l] += part[l + w])
  if (l == 0)
    out[out_off] = (OT)FINISH(part[0], n, mode);
}
#endif
#undef ACCV
#undef TO_ACCV
#undef VTERM
#undef VKADD
#undef GA
#undef ADDV

#else /* the int32 sums */

/* Stage 1, GPU: as the float sums' (above), in long4 (a norm: double4). */
#if KILN_WANTS(kiln_reduce_sum_groups_i32)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
kiln_reduce_sum_groups_i32(global const int *x, ulong off, ulong n, ulong chunk, int mode,
                           global isum *partial)
{
  local isum part[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const int *p = x + off, *a = p + sp.head;
  long4 s = 0;
#ifdef KILN_HAS_FP64
  double4 q = 0;
#endif
  (void)chunk;
  for (; i < sp.nv; i += gs) {
    int4 v = GLOAD(a, i);
#ifdef KILN_HAS_FP64
    if (mode == 2) {
      double4 d = convert_double4(v);
      q += d * d;
      continue;
    }
#endif
    s += convert_long4(v);
  }
  isum k;
#ifdef KILN_HAS_FP64
  if (mode == 2)
    k.d = q.s0 + q.s1 + q.s2 + q.s3;
  else
#endif
    k.l = s.s0 + s.s1 + s.s2 + s.s3;
  for (ulong j = g; j < sp.head; j += gs)
    k = iadd(k, p[j], mode);
  for (ulong j = sp.tail + g; j < n; j += gs)
    k = iadd(k, p[j], mode);
  part[l] = k;
  TREE(l, part[l] = iplus(part[l], part[l + w], mode))
  if (l == 0)
    partial[slot()] = part[0];
}
#endif

/* Stage 2, GPU: one group, as the float sums'. */
#if KILN_WANTS(kiln_reduce_sum_merge_i32)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
kiln_reduce_sum_merge_i32(global const isum *partial, ulong np, ulong n, int mode,
                          global void *out, ulong out_off)
{
  local isum part[WG];
  uint l = get_local_id(0);
  isum k = {0};
  partial += get_group_id(1) * np; /* the row */
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    k = iplus(k, partial[i], mode);
  part[l] = k;
  TREE(l, part[l] = iplus(part[l], part[l + w], mode))
  if (l == 0)
    put_i32(out, out_off, part[0], n, mode);
}
#endif

#endif /* SUMS */

/* ---- min and max ----------------------------------------------------------- */

/* Stage 1, GPU: group g's work-items pick from their grid-stride share of
 * vectors lane by lane (PICKV), from the identity EXT_ID, which any value
 * or NaN displaces; then the head and tail, then the group's tree. some[g]
 * says whether the group read any element. */
#if VEC_NAN
#define PICKV(e, v, want_max)                                                  \
  select(select((want_max) ? max(e, v) : min(e, v), v, isnan(v)), e, isnan(e))
#else
#define PICKV(e, v, want_max) ((want_max) ? max(e, v) : min(e, v))
#endif
#if KILN_BUILDS(kiln_reduce_ext_groups)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_ext_groups)(global const ST *x, ulong off, ulong n, ulong chunk,
                             int want_max, global VT *partial, global int *some)
{
  local VT part[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const ST *p = x + off, *a = p + sp.head;
  GVT e = (GVT)(EXT_ID(want_max));
  (void)chunk;
  for (; i + (GU - 1) * gs < sp.nv; i += GU * gs) {
    GVT v0 = GLOAD(a, i), v1 = GLOAD(a, i + gs), v2 = GLOAD(a, i + 2 * gs),
        v3 = GLOAD(a, i + 3 * gs);
    e = PICKV(e, v0, want_max);
    e = PICKV(e, v1, want_max);
    e = PICKV(e, v2, want_max);
    e = PICKV(e, v3, want_max);
  }
  for (; i < sp.nv; i += gs) {
    GVT v = GLOAD(a, i);
    e = PICKV(e, v, want_max);
  }
  VT lane[GV], r = EXT_ID(want_max);
  CAT(vstore, GV)(e, 0, lane);
  for (int j = 0; j < GV; j++)
    r = PICK(r, lane[j], want_max);
  for (ulong j = g; j < sp.head; j += gs)
    r = PICK(r, (VT)LOAD(V, p, j), want_max);
  for (ulong j = sp.tail + g; j < n; j += gs)
    r = PICK(r, (VT)LOAD(V, p, j), want_max);
  part[l] = r;
  TREE(l, part[l] = PICK(part[l], part[l + w], want_max))
  if (l == 0) {
    ulong first = (ulong)get_group_id(0) * WG; /* the group's first work-item */
    partial[slot()] = part[0];
    some[slot()] = first < sp.nv || first < sp.head || sp.tail + first < n;
  }
}
#endif

/* Stage 2, GPU: one group picks from the partials of the groups that read
 * any element. */
#if KILN_BUILDS(kiln_reduce_ext_merge)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_ext_merge)(global const VT *partial, global const int *some, ulong np,
                            int want_max, global ST *out, ulong out_off)
{
  local VT part[WG];
  uint l = get_local_id(0);
  VT r = EXT_ID(want_max);
  partial += get_group_id(1) * np; /* the row */
  some += get_group_id(1) * np;
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    if (some[i])
      r = PICK(r, partial[i], want_max);
  part[l] = r;
  TREE(l, part[l] = PICK(part[l], part[l + w], want_max))
  if (l == 0)
    STORE(V, part[0], out, out_off);
}
#endif
#undef PICKV

/* ---- argmin and argmax ----------------------------------------------------- */

/* (v, j) into the best (*e, *b) so far; *b < 0: none yet. Ties and NaNs
 * go to the smaller index, so the order of the calls does not matter. */
inline void NAME(arg_take)(VT v, long j, VT *e, long *b, int want_max)
{
  if (*b < 0 || BEATS(v, j, *e, *b, want_max)) {
    *e = v;
    *b = j;
  }
}

/* A vector's GV lanes, elements j0, j0 + 1, ... */
inline void NAME(arg_lanes)(GVT v, long j0, VT *e, long *b, int want_max)
{
  VT lane[GV];
  CAT(vstore, GV)(v, 0, lane);
  for (int k = 0; k < GV; k++)
    NAME(arg_take)(lane[k], j0 + k, e, b, want_max);
}

/* Stage 1, GPU: as min and max's, with indices; pi[g] is -1 where group g
 * read no element. */
#if KILN_BUILDS(kiln_reduce_arg_groups)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_arg_groups)(global const ST *x, ulong off, ulong n, ulong chunk,
                             int want_max, global VT *pv, global long *pi)
{
  local VT lv[WG];
  local long li[WG];
  uint l = get_local_id(0);
  ulong g = get_global_id(0), gs = get_global_size(0), i = g;
  off += get_group_id(1) * n; /* the row */
  span sp = span_of(off, n, GV);
  global const ST *p = x + off, *a = p + sp.head;
  VT e = 0;
  long b = -1;
  (void)chunk;
  for (; i + gs < sp.nv; i += 2 * gs) {
    GVT v0 = GLOAD(a, i), v1 = GLOAD(a, i + gs);
    NAME(arg_lanes)(v0, (long)(sp.head + i * GV), &e, &b, want_max);
    NAME(arg_lanes)(v1, (long)(sp.head + (i + gs) * GV), &e, &b, want_max);
  }
  for (; i < sp.nv; i += gs)
    NAME(arg_lanes)(GLOAD(a, i), (long)(sp.head + i * GV), &e, &b, want_max);
  for (ulong j = g; j < sp.head; j += gs)
    NAME(arg_take)(LOAD(V, p, j), (long)j, &e, &b, want_max);
  for (ulong j = sp.tail + g; j < n; j += gs)
    NAME(arg_take)(LOAD(V, p, j), (long)j, &e, &b, want_max);
  lv[l] = e;
  li[l] = b;
  TREE(l, if (li[l + w] >= 0) {
    VT e2 = lv[l];
    long b2 = li[l];
    NAME(arg_take)(lv[l + w], li[l + w], &e2, &b2, want_max);
    lv[l] = e2;
    li[l] = b2;
  })
  if (l == 0) {
    pv[slot()] = lv[0];
    pi[slot()] = li[0];
  }
}
#endif

/* Stage 2, GPU: one group takes the groups' winners. */
#if KILN_BUILDS(kiln_reduce_arg_merge)
kernel __attribute__((reqd_work_group_size(WG, 1, 1))) void
NAME(kiln_reduce_arg_merge)(global const VT *pv, global const long *pi, ulong np,
                            int want_max, global long *out, ulong out_off)
{
  local VT lv[WG];
  local long li[WG];
  uint l = get_local_id(0);
  VT e = 0;
  long b = -1;
  pv += get_group_id(1) * np; /* the row */
  pi += get_group_id(1) * np;
  out_off += get_group_id(1);
  for (ulong i = l; i < np; i += WG)
    if (pi[i] >= 0)
      NAME(arg_take)(pv[i], pi[i], &e, &b, want_max);
  lv[l] = e;
  li[l] = b;
  TREE(l, if (li[l + w] >= 0) {
    VT e2 = lv[l];
    long b2 = li[l];
    NAME(arg_take)(lv[l + w], li[l + w], &e2, &b2, want_max);
    lv[l] = e2;
    li[l] = b2;
  })
  if (l == 0)
    out[out_off] = li[0];
}
#endif

#endif /* V */
