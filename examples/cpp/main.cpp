// Calls the gemmc-generated launcher for the Inception-3 batch and checks every product against a double
// reference computed on the host. Exit status 0 when all relative Frobenius errors are below 1e-5.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include <cuda_runtime.h>

#include "inception3.h"

#define CHECK(call)                                                                    \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess) {                                                         \
      std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(err_)); \
      return 2;                                                                        \
    }                                                                                  \
  } while (0)

struct Shape {
  int m, n, k;
};

int main() {
  // The batch of examples/inception3.gs, in the schedule's order (row-major A, B, C; alpha 1, beta 0).
  const std::vector<Shape> shapes = {{196, 192, 192}, {196, 16, 192}, {196, 96, 192}, {196, 64, 192}};
  const size_t batch = shapes.size();
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);

  std::vector<std::vector<float>> hA(batch), hB(batch);
  std::vector<const float*> dA(batch), dB(batch);
  std::vector<float*> dC(batch);
  for (size_t i = 0; i < batch; ++i) {
    const Shape s = shapes[i];
    hA[i].resize(size_t(s.m) * s.k);
    hB[i].resize(size_t(s.k) * s.n);
    for (float& x : hA[i]) x = uniform(rng);
    for (float& x : hB[i]) x = uniform(rng);
    float *a, *b, *c;
    CHECK(cudaMalloc(&a, hA[i].size() * sizeof(float)));
    CHECK(cudaMalloc(&b, hB[i].size() * sizeof(float)));
    CHECK(cudaMalloc(&c, size_t(s.m) * s.n * sizeof(float)));
    CHECK(cudaMemcpy(a, hA[i].data(), hA[i].size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(b, hB[i].data(), hB[i].size() * sizeof(float), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(c, 0xff, size_t(s.m) * s.n * sizeof(float)));  // NaN: an unwritten element shows
    dA[i] = a;
    dB[i] = b;
    dC[i] = c;
  }

  CHECK(gemmc_inception3(dA.data(), dB.data(), dC.data(), /*stream=*/0));
  CHECK(cudaDeviceSynchronize());

  int failures = 0;
  for (size_t i = 0; i < batch; ++i) {
    const Shape s = shapes[i];
    std::vector<float> c(size_t(s.m) * s.n);
    CHECK(cudaMemcpy(c.data(), dC[i], c.size() * sizeof(float), cudaMemcpyDeviceToHost));
    double num = 0.0, den = 0.0;
    for (int r = 0; r < s.m; ++r)
      for (int col = 0; col < s.n; ++col) {
        double ref = 0.0;
        for (int k = 0; k < s.k; ++k) ref += double(hA[i][size_t(r) * s.k + k]) * hB[i][size_t(k) * s.n + col];
        const double d = double(c[size_t(r) * s.n + col]) - ref;
        num += d * d;
        den += ref * ref;
      }
    const double err = std::sqrt(num / den);
    const bool ok = std::isfinite(err) && err < 1e-5;
    failures += !ok;
    std::printf("problem %zu (%d x %d x %d): relative error %.2e %s\n", i, s.m, s.n, s.k, err, ok ? "ok" : "FAILED");
    CHECK(cudaFree(const_cast<float*>(dA[i])));
    CHECK(cudaFree(const_cast<float*>(dB[i])));
    CHECK(cudaFree(dC[i]));
  }
  std::printf("%s\n", failures ? "FAILED" : "all problems match the double reference");
  return failures ? 1 : 0;
}
