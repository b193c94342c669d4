/*
 * test_int8_more.h - the second half of test_int8.c: qlinear / qgemm, the element-wise
 * kernels, pooling and argument errors (included once, by test_int8.c).
 */

/* ---------------------------------------------------------------- linear, gemm */

static void test_linear(const char *isa) {
  int fails = 0;
  for (int t = 0; t < (g_quick ? 30 : 200); ++t) {
    const int64_t rows = rnd(1, 40), K = t % 7 == 0 ? rnd(200, 1500) : rnd(1, 70),
                  M = rnd(1, 40);
    int8_t *x = bytes(rows * K, -128, 127), *w = bytes(M * K, -127, 127);
    int32_t *m = malloc(4 * M), *sh = malloc(4 * M), *bias = malloc(4 * M);
    channel_params(M, m, sh, bias, t % 3 == 0);
    const int32_t xzp = rnd(-128, 127), yzp = rnd(-128, 127);
    mte_requant rq = {m, sh, yzp, -128, 127};
    int8_t *expect = out_buf(rows * M), *got = out_buf(rows * M), *gc = out_buf(rows * M);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < M; ++o) {
        int64_t acc = bias[o];
        for (int64_t k = 0; k < K; ++k) acc += (int64_t)(x[r * K + k] - xzp) * w[o * K + k];
        expect[r * M + o] = ref_out(acc, m[o], sh[o], yzp, -128, 127);
      }
    mte_qconv2d_plan *plan = NULL;
    if (t % 2) CHECK(mte_qlinear_prepare(M, K, w, &plan) == MTE_OK, "prepare");
    int st = mte_qlinear(rows, K, M, x, xzp, w, plan, bias, &rq, got, NULL);
    mte_qconv2d_free(plan);
    int64_t diff = 0;
    for (int64_t i = 0; i < rows * M; ++i) diff += got[i] != expect[i];
    CHECK(st == MTE_OK && diff == 0 && intact(got, rows * M, 64),
          "%s qlinear %lldx%lld @ %lldx%lld: st %d, %lld differ", isa, (long long)rows,
          (long long)K, (long long)M, (long long)K, st, (long long)diff);
    /* qgemm: the same product with x transposed (K x rows) and the output transposed */
    int8_t *xt = bytes(rows * K, 0, 0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k) xt[k * rows + r] = x[r * K + k];
    st = mte_qgemm(M, rows, K, w, xt, xzp, bias, &rq, gc, NULL);
    int64_t dg = 0;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t o = 0; o < M; ++o) dg += gc[o * rows + r] != expect[r * M + o];
    CHECK(st == MTE_OK && dg == 0 && intact(gc, rows * M, 64), "%s qgemm: %lld differ", isa,
          (long long)dg);
    fails += diff != 0 || dg != 0;
    free(x), free(w), free(xt), free(m), free(sh), free(bias), free(expect), free(got), free(gc);
    if (fails) break;
  }
}

/* ---------------------------------------------------------------- element-wise */

static void test_elementwise(void) {
  enum { N = 1000 };
  float xf[N], back[N];
  int8_t q[N + 64], r[N + 64], a[N], b[N], y[N + 64];
  static const float special[] = {0.0f, -0.0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, 1e30f, -1e30f,
                                  INFINITY, -INFINITY, NAN};
  for (int i = 0; i < N; ++i)
    xf[i] = i < 12 ? special[i] : 200.0f * mte_test_uniform();
  const float scale = 0.37f;
  const int32_t zp = -7;
  memset(q, SENTINEL, sizeof q);
  CHECK(mte_quantize(N, xf, scale, zp, q) == MTE_OK && intact(q, N, 64), "quantize");
  int bad = 0;
  for (int i = 0; i < N; ++i) {
    float v = roundf(xf[i] / scale);
    int32_t e = v != v ? zp : v > 1000.0f ? 127 : v < -1000.0f ? -128 : (int32_t)v + zp;
    e = e < -128 ? -128 : e > 127 ? 127 : e;
    bad += q[i] != e;
  }
  CHECK(bad == 0 && q[0] == zp && q[2] == zp + 1 && q[11] == zp, "quantize values: %d", bad);
  CHECK(mte_dequantize(N, q, scale, zp, back) == MTE_OK, "dequantize");
  bad = 0;
  for (int i = 0; i < N; ++i) bad += back[i] != (float)(q[i] - zp) * scale;
  CHECK(bad == 0, "dequantize values: %d", bad);
  for (int s = -31; s <= 30; ++s) {
    int32_t m = (int32_t)(mte_test_next() & 0x7fffffff);
    memset(r, SENTINEL, sizeof r);
    CHECK(mte_requantize(N, q, zp, m, s, 5, r) == MTE_OK && intact(r, N, 64), "requantize");
    bad = 0;
    for (int i = 0; i < N; ++i) bad += r[i] != ref_out(q[i] - zp, m, s, 5, -128, 127);
    CHECK(bad == 0, "requantize shift %d: %d", s, bad);
  }
  for (int t = 0; t < 50; ++t) {
    mte_qadd_params p = {rnd(-128, 127), 0, rnd(-20, 0), rnd(-128, 127), 0, rnd(-20, 0),
                         rnd(-128, 127), 0, rnd(-25, 5), rnd(-128, 0), rnd(0, 127),
                         rnd(0, 23)};
    p.a_multiplier = (int32_t)(mte_test_next() & 0x7fffffff);
    p.b_multiplier = (int32_t)(mte_test_next() & 0x7fffffff);
    p.y_multiplier = (int32_t)(mte_test_next() & 0x7fffffff);
    for (int i = 0; i < N; ++i) a[i] = (int8_t)rnd(-128, 127), b[i] = (int8_t)rnd(-128, 127);
    memset(y, SENTINEL, sizeof y);
    CHECK(mte_qadd(&p, N, a, b, y) == MTE_OK && intact(y, N, 64), "qadd");
    bad = 0;
    for (int i = 0; i < N; ++i) {
      int32_t sa = ref_mbqm((a[i] - p.a_zero_point) * (1 << p.left_shift), p.a_multiplier, p.a_shift);
      int32_t sb = ref_mbqm((b[i] - p.b_zero_point) * (1 << p.left_shift), p.b_multiplier, p.b_shift);
      bad += y[i] != ref_out((int64_t)sa + sb, p.y_multiplier, p.y_shift, p.y_zero_point,
                             p.act_min, p.act_max);
    }
    CHECK(bad == 0, "qadd values: %d", bad);
    if (t % 5 == 0) { /* the lookup form equals the arithmetic, for every pair */
      static int8_t table[65536], every[65536], firsts[65536], direct[65536], looked[65536];
      for (int i = 0; i < 65536; ++i) firsts[i] = (int8_t)(i >> 8), every[i] = (int8_t)i;
      CHECK(mte_qadd_table(&p, table) == MTE_OK, "qadd_table");
      CHECK(mte_qadd(&p, 65536, firsts, every, direct) == MTE_OK, "qadd all pairs");
      CHECK(mte_qadd_lookup(65536, firsts, every, table, looked) == MTE_OK, "qadd_lookup");
      CHECK(memcmp(direct, looked, sizeof looked) == 0, "qadd_lookup differs from qadd");
    }
  }
  mte_qadd_params bad_p = {0, 1, 0, 0, 1, 0, 0, 1, 0, -128, 127, 24};
  static int8_t t2[65536];
  CHECK(mte_qadd_table(&bad_p, t2) == MTE_EINVAL, "qadd_table checks the parameters");
  CHECK(mte_qadd_lookup(4, a, b, NULL, y) == MTE_EINVAL, "qadd_lookup without a table");
}

/* ---------------------------------------------------------------- pools */

static void test_pools(void) {
  for (int t = 0; t < (g_quick ? 40 : 300); ++t) {
    mte_pool2d_params p = {rnd(1, 4), rnd(1, 4), rnd(1, 3), rnd(1, 3), 0, 0, 1, 1,
                           mte_test_pick(2), mte_test_pick(2), 0};
    p.pad_h = rnd(0, (int)p.kernel_h / 2 + (t % 9 == 0)), p.pad_w = rnd(0, (int)p.kernel_w / 2);
    const int avg = t % 2;
    if (!avg) p.dilation_h = rnd(1, 2), p.dilation_w = rnd(1, 2);
    const int64_t N = rnd(1, 2), C = rnd(1, 3), H = rnd(1, 12), W = rnd(1, 12);
    int64_t wo, ho = mte_pool2d_output_size(H, p.kernel_h, p.stride_h, p.pad_h, p.dilation_h, p.ceil_mode);
    wo = mte_pool2d_output_size(W, p.kernel_w, p.stride_w, p.pad_w, p.dilation_w, p.ceil_mode);
    if (p.pad_h > p.kernel_h / 2 || ho < 1 || wo < 1) continue;
    int8_t *x = bytes(N * C * H * W, -128, 127), *y = out_buf(N * C * ho * wo);
    const int32_t lo = rnd(-128, 0), hi = rnd(0, 127);
    int st = avg ? mte_qavg_pool2d(&p, N, C, H, W, x, lo, hi, y)
                 : mte_qmax_pool2d(&p, N, C, H, W, x, y);
    int bad = 0;
    for (int64_t pl = 0; pl < N * C; ++pl)
      for (int64_t r = 0; r < ho; ++r)
        for (int64_t s = 0; s < wo; ++s) {
          int64_t sum = 0, mx = -128, h0 = r * p.stride_h - p.pad_h, w0 = s * p.stride_w - p.pad_w;
          for (int64_t i = 0; i < p.kernel_h; ++i)
            for (int64_t j = 0; j < p.kernel_w; ++j) {
              int64_t ih = h0 + i * p.dilation_h, iw = w0 + j * p.dilation_w;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              int8_t v = x[(pl * H + ih) * W + iw];
              sum += v, mx = v > mx ? v : mx;
            }
          int64_t e = mx;
          if (avg) {
            int64_t eh = h0 + p.kernel_h < H + p.pad_h ? h0 + p.kernel_h : H + p.pad_h;
            int64_t ew = w0 + p.kernel_w < W + p.pad_w ? w0 + p.kernel_w : W + p.pad_w;
            int64_t ch = p.count_include_pad ? eh - h0 : (eh < H ? eh : H) - (h0 > 0 ? h0 : 0);
            int64_t cw = p.count_include_pad ? ew - w0 : (ew < W ? ew : W) - (w0 > 0 ? w0 : 0);
            int64_t cnt = ch * cw < 1 ? 1 : ch * cw;
            e = sum >= 0 ? (sum + cnt / 2) / cnt : -((-sum + cnt / 2) / cnt);
            e = e < lo ? lo : e > hi ? hi : e;
          }
          bad += y[(pl * ho + r) * wo + s] != e;
        }
    CHECK(st == MTE_OK && bad == 0 && intact(y, N * C * ho * wo, 64),
          "%s pool k%lldx%lld s%lld,%lld p%lld,%lld ceil %d incl %d on %lldx%lld: st %d, %d bad",
          avg ? "avg" : "max", (long long)p.kernel_h, (long long)p.kernel_w,
          (long long)p.stride_h, (long long)p.stride_w, (long long)p.pad_h, (long long)p.pad_w,
          p.ceil_mode, p.count_include_pad, (long long)H, (long long)W, st, bad);
    free(x), free(y);
  }
}

/* ---------------------------------------------------------------- errors */

static void test_errors(void) {
  int8_t x[64] = {0}, w[64] = {0}, y[64];
  int32_t m[4] = {1 << 30, 1 << 30, 1 << 30, 1 << 30}, sh[4] = {0, 0, 0, 0};
  mte_requant rq = {m, sh, 0, -128, 127};
  mte_conv2d_desc d = {1, 2, 3, 3, 2, 1, 1, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1};
  memset(y, SENTINEL, sizeof y);
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, &rq, y, NULL) == MTE_OK, "valid call");
  memset(y, SENTINEL, sizeof y);
  CHECK(mte_qconv2d(&d, x, 128, w, NULL, &rq, y, NULL) == MTE_EINVAL, "x_zp 128");
  mte_requant bad = rq;
  bad.zero_point = -129;
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, &bad, y, NULL) == MTE_EINVAL, "y_zp");
  bad = rq, bad.act_min = 5, bad.act_max = 4;
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, &bad, y, NULL) == MTE_EINVAL, "act_min > act_max");
  int32_t negm[4] = {-1, 0, 0, 0}, bigs[4] = {0, 31, 0, 0};
  bad = rq, bad.multiplier = negm;
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, &bad, y, NULL) == MTE_EINVAL, "multiplier < 0");
  bad = rq, bad.shift = bigs;
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, &bad, y, NULL) == MTE_EINVAL, "shift 31");
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, NULL, y, NULL) == MTE_EINVAL, "no requant");
  w[1] = -128;
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, &rq, y, NULL) == MTE_EINVAL, "w = -128");
  w[1] = 0;
  mte_conv2d_desc d2 = d;
  d2.out_w = 4;
  CHECK(mte_qconv2d(&d2, x, 0, w, NULL, &rq, y, NULL) == MTE_EINVAL, "wrong out_w");
  d2 = d, d2.groups = 3;
  CHECK(mte_qconv2d(&d2, x, 0, w, NULL, &rq, y, NULL) == MTE_EINVAL, "groups");
  CHECK(mte_qconv2d(&d, x, 0, w, NULL, &rq, (int8_t *)x + 2, NULL) == MTE_EINVAL, "y overlaps x");
  CHECK(mte_qconv2d(&d, NULL, 0, w, NULL, &rq, y, NULL) == MTE_EINVAL, "NULL x");
  CHECK(intact(y, 0, 64), "nothing written on error");
  CHECK(mte_qlinear(2, 3, 2, x, 0, w, NULL, NULL, &bad, y, NULL) == MTE_EINVAL, "qlinear shift");
  CHECK(mte_qlinear(2, 0, 2, x, 0, w, NULL, NULL, &rq, y, NULL) == MTE_EINVAL, "qlinear K 0");
  CHECK(mte_qlinear(2, 65537, 2, x, 0, w, NULL, NULL, &rq, y, NULL) == MTE_EINVAL, "K big");
  CHECK(mte_quantize(4, (const float *)m, 0.0f, 0, y) == MTE_EINVAL, "scale 0");
  CHECK(mte_quantize(4, (const float *)m, NAN, 0, y) == MTE_EINVAL, "scale NaN");
  CHECK(mte_dequantize(4, x, 1.0f, 200, (float *)m) == MTE_EINVAL, "zp 200");
  CHECK(mte_requantize(4, x, 0, -5, 0, 0, y) == MTE_EINVAL, "requantize m < 0");
  mte_qadd_params ap = {0, 1, 0, 0, 1, 0, 0, 1, 0, -128, 127, 24};
  CHECK(mte_qadd(&ap, 4, x, x, y) == MTE_EINVAL, "left_shift 24");
  mte_pool2d_params pp = {2, 2, 1, 1, 0, 0, 1, 1, 0, 0, 0};
  CHECK(mte_qmax_pool2d(&pp, 1, 1, 1, 1, x, y) == MTE_EINVAL, "window larger than input");
  pp.dilation_h = 2;
  CHECK(mte_qavg_pool2d(&pp, 1, 1, 4, 4, x, -128, 127, y) == MTE_EINVAL, "avg dilation");
  CHECK(intact(y, 0, 64), "nothing written on error");
}
