// Random numbers: Philox4x32-10 against the published Random123 known answers, the documented
// mapping from counter blocks to elements (recomputed here from the raw Philox words), stream
// continuation, seeding, thread-count independence, layouts, statistics and typed errors.

#include <gtest/gtest.h>
#include <oxmera/oxmera.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

#include "core/philox.h"
#include "test_util.h"

namespace {

using oxtest::caught;

// Restores the thread count a test changed.
struct ThreadGuard {
  int saved = ox::get_num_threads();
  ~ThreadGuard() { ox::set_num_threads(saved); }
};

// |a - e| <= atol + rtol * |e|.
bool close(double a, double e, double atol, double rtol) {
  return std::fabs(a - e) <= atol + rtol * std::fabs(e);
}

// ---- An independent Philox4x32-10, written from Salmon et al. (SC'11) / Random123 -------

struct Words {
  uint32_t v[4];
  bool operator==(const Words&) const = default;
};

// Random123 philox4x32round / philox4x32bumpkey, applied R times (key bumped between rounds).
Words reference_philox(Words ctr, uint32_t k0, uint32_t k1, int rounds = 10) {
  for (int r = 0; r < rounds; ++r) {
    if (r > 0) {
      k0 += 0x9E3779B9u;  // golden ratio
      k1 += 0xBB67AE85u;  // sqrt(3) - 1
    }
    const uint64_t prod0 = uint64_t{0xD2511F53u} * ctr.v[0];
    const uint64_t prod1 = uint64_t{0xCD9E8D57u} * ctr.v[2];
    const auto hi0 = static_cast<uint32_t>(prod0 >> 32), lo0 = static_cast<uint32_t>(prod0);
    const auto hi1 = static_cast<uint32_t>(prod1 >> 32), lo1 = static_cast<uint32_t>(prod1);
    ctr = Words{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
  }
  return ctr;
}

Words words(const ox::philox::Block& b) { return Words{{b.w[0], b.w[1], b.w[2], b.w[3]}}; }

// Block `index` of the stream of `seed`, as the philox.h header comment defines it.
Words stream_block(uint64_t seed, uint64_t index) {
  const ox::philox::Block b =
      ox::philox::philox4x32_10(static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0,
                                0, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
  return words(b);
}

// The 64-bit value of lane l (0 or 1) of a block: low word 2l, high word 2l + 1.
uint64_t lane64(const Words& w, int64_t l) { return uint64_t{w.v[2 * l + 1]} << 32 | w.v[2 * l]; }

// Element i of each draw kind, recomputed from the raw words of the documented block.
float expected_rand_f32(uint64_t seed, uint64_t first, int64_t i) {
  const Words w = stream_block(seed, first + uint64_t(i / 4));
  return static_cast<float>(std::ldexp(double(w.v[i % 4] >> 8), -24));
}
double expected_rand_f64(uint64_t seed, uint64_t first, int64_t i) {
  const Words w = stream_block(seed, first + uint64_t(i / 2));
  return std::ldexp(double(lane64(w, i % 2) >> 11), -53);
}
double expected_normal(uint64_t seed, uint64_t first, int64_t i) {
  const Words w = stream_block(seed, first + uint64_t(i / 2));
  const double u1 = std::ldexp(double((lane64(w, 0) >> 11) + 1), -53);  // (0, 1]
  const double u2 = std::ldexp(double(lane64(w, 1) >> 11), -53);        // [0, 1)
  const double r = std::sqrt(-2.0 * std::log(u1));
  const double two_pi = 2.0 * 3.14159265358979323846;
  return i % 2 == 0 ? r * std::cos(two_pi * u2) : r * std::sin(two_pi * u2);
}
int64_t expected_randint(uint64_t seed, uint64_t first, int64_t i, int64_t low, int64_t high) {
  const Words w = stream_block(seed, first + uint64_t(i / 2));
  const uint64_t range = uint64_t(high) - uint64_t(low);
  return static_cast<int64_t>(uint64_t(low) + lane64(w, i % 2) % range);
}
bool expected_bernoulli(uint64_t seed, uint64_t first, int64_t i, double p) {
  const Words w = stream_block(seed, first + uint64_t(i / 4));
  return std::ldexp(double(w.v[i % 4]), -32) < p;
}

// ---- Philox4x32-10 --------------------------------------------------------------------------

struct Kat {
  Words ctr;
  uint32_t k0, k1;
  Words expected;
};

// Random123 tests/kat_vectors, the three "philox4x32 10" lines: ctr[4] key[2] -> result[4].
const Kat kKat[] = {
    {{{0x00000000, 0x00000000, 0x00000000, 0x00000000}},
     0x00000000,
     0x00000000,
     {{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}}},
    {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
     0xffffffff,
     0xffffffff,
     {{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}}},
    {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
     0xa4093822,
     0x299f31d0,
     {{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}}},
};

TEST(Philox, Random123KnownAnswers) {
  for (const Kat& k : kKat) {
    const Words got = words(
        ox::philox::philox4x32_10(k.ctr.v[0], k.ctr.v[1], k.ctr.v[2], k.ctr.v[3], k.k0, k.k1));
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(got.v[j], k.expected.v[j]) << std::hex << "ctr " << k.ctr.v[0] << " word " << j;
  }
}

TEST(Philox, ReferenceImplementationPassesTheKnownAnswers) {
  for (const Kat& k : kKat) EXPECT_TRUE(reference_philox(k.ctr, k.k0, k.k1) == k.expected);
  // Random123 kat_vectors, "philox4x32 7" lines: the round count is a real parameter here.
  EXPECT_TRUE(reference_philox(Words{{0, 0, 0, 0}}, 0, 0, 7) ==
              (Words{{0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48}}));
  EXPECT_TRUE(reference_philox(Words{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}}, 0xa4093822,
                               0x299f31d0,
                               7) == (Words{{0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a}}));
}

TEST(Philox, AgreesWithReferenceOnManyInputs) {
  // Inputs from a simple LCG, so every word position sees varied high and low bits.
  uint64_t s = 0x853c49e6748fea9bull;
  auto next = [&] {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<uint32_t>(s >> 32);
  };
  for (int n = 0; n < 2000; ++n) {
    const Words ctr{{next(), next(), next(), next()}};
    const uint32_t k0 = next(), k1 = next();
    const Words got =
        words(ox::philox::philox4x32_10(ctr.v[0], ctr.v[1], ctr.v[2], ctr.v[3], k0, k1));
    ASSERT_TRUE(got == reference_philox(ctr, k0, k1)) << "input " << n;
  }
}

TEST(Philox, BlockUsesCounterLowHighAndSeedAsKey) {
  const uint64_t seed = 0x0123456789abcdefull, index = 0x0000000500000002ull;
  const Words expected =
      reference_philox(Words{{0x00000002, 0x00000005, 0, 0}}, 0x89abcdef, 0x01234567);
  EXPECT_TRUE(words(ox::philox::block(seed, index)) == expected);
}

TEST(Philox, BlocksForRoundsUp) {
  using ox::philox::Kind;
  EXPECT_EQ(ox::philox::blocks_for(Kind::Uniform32, 0), 0u);
  EXPECT_EQ(ox::philox::blocks_for(Kind::Uniform32, 1), 1u);
  EXPECT_EQ(ox::philox::blocks_for(Kind::Uniform32, 4), 1u);
  EXPECT_EQ(ox::philox::blocks_for(Kind::Uniform32, 5), 2u);
  EXPECT_EQ(ox::philox::blocks_for(Kind::Bernoulli, 9), 3u);
  EXPECT_EQ(ox::philox::blocks_for(Kind::Uniform64, 3), 2u);
  EXPECT_EQ(ox::philox::blocks_for(Kind::Normal, 4), 2u);
  EXPECT_EQ(ox::philox::blocks_for(Kind::Integer, 7), 4u);
}

TEST(Philox, UnitValuesAreExactAndBelowOne) {
  EXPECT_EQ(ox::philox::unit_float(0u), 0.0f);
  EXPECT_EQ(ox::philox::unit_float(0xffffffffu), 1.0f - 0x1p-24f);
  EXPECT_EQ(ox::philox::unit_float(0x80000000u), 0.5f);
  EXPECT_EQ(ox::philox::unit_float(0x000000ffu), 0.0f);  // the low 8 bits are dropped
  EXPECT_EQ(ox::philox::unit_double(~uint64_t{0}), 1.0 - 0x1p-53);
  EXPECT_EQ(ox::philox::unit_double(uint64_t{1} << 63), 0.5);
  EXPECT_EQ(ox::philox::unit_double(0x7ff), 0.0);  // the low 11 bits are dropped
}

// ---- The documented counter layout ----------------------------------------------------------

constexpr uint64_t kSeed = 0x5eed0123456789abull;

TEST(Random, RandF32FollowsTheLayoutAndContinuesTheStream) {
  ox::Generator gen(kSeed);
  const ox::Tensor a = ox::rand({2, 5}, {}, &gen);  // 10 elements: 3 blocks
  EXPECT_EQ(a.dtype(), ox::kF32);
  EXPECT_EQ(gen.offset(), 3u);
  const ox::Tensor b = ox::rand({5}, {}, &gen);  // continues at block 3, takes 2
  EXPECT_EQ(gen.offset(), 5u);
  const auto va = a.to_vector<float>(), vb = b.to_vector<float>();
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(va[i], expected_rand_f32(kSeed, 0, i)) << i;
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(vb[i], expected_rand_f32(kSeed, 3, i)) << i;
}

TEST(Random, RandF64FollowsTheLayoutAndContinuesTheStream) {
  ox::Generator gen(kSeed);
  gen.set_offset(11);
  const ox::Tensor a = ox::rand({5}, {.dtype = ox::kF64}, &gen);  // 3 blocks
  EXPECT_EQ(gen.offset(), 14u);
  const ox::Tensor b = ox::rand({3}, {.dtype = ox::kF64}, &gen);  // 2 blocks
  EXPECT_EQ(gen.offset(), 16u);
  const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(va[i], expected_rand_f64(kSeed, 11, i)) << i;
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(vb[i], expected_rand_f64(kSeed, 14, i)) << i;
}

TEST(Random, RandnFollowsBoxMullerOverABlock) {
  ox::Generator gen(kSeed);
  const ox::Tensor a = ox::randn({7}, {.dtype = ox::kF64}, &gen);  // 4 blocks
  EXPECT_EQ(gen.offset(), 4u);
  const ox::Tensor b = ox::randn({2, 3}, {}, &gen);  // f32, 3 blocks
  EXPECT_EQ(gen.offset(), 7u);
  const auto va = a.to_vector<double>();
  for (int64_t i = 0; i < 7; ++i) {
    const double e = expected_normal(kSeed, 0, i);
    EXPECT_TRUE(close(va[i], e, 1e-7, 1e-7)) << i << ": " << va[i] << " vs " << e;
  }
  const auto vb = b.to_vector<float>();
  for (int64_t i = 0; i < 6; ++i) {
    const double e = expected_normal(kSeed, 4, i);
    EXPECT_TRUE(close(vb[i], e, 1.3e-6, 1e-5)) << i << ": " << vb[i] << " vs " << e;
  }
}

TEST(Random, RandintIsLowPlusBitsModRange) {
  ox::Generator gen(kSeed);
  const ox::Tensor a = ox::randint(-5, 1000003, {9}, {}, &gen);  // 5 blocks
  EXPECT_EQ(a.dtype(), ox::kI64);
  EXPECT_EQ(gen.offset(), 5u);
  const auto va = a.to_vector<int64_t>();
  for (int64_t i = 0; i < 9; ++i) EXPECT_EQ(va[i], expected_randint(kSeed, 0, i, -5, 1000003));
  // The widest range there is: 2^64 - 1 values.
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  const ox::Tensor b = ox::randint(lo, hi, {4}, {}, &gen);
  EXPECT_EQ(gen.offset(), 7u);
  const auto vb = b.to_vector<int64_t>();
  for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(vb[i], expected_randint(kSeed, 5, i, lo, hi));
  // One-argument form: [0, high), other integer dtypes.
  const ox::Tensor c = ox::randint(77, {6}, {.dtype = ox::kI32}, &gen);
  EXPECT_EQ(c.dtype(), ox::kI32);
  EXPECT_EQ(gen.offset(), 10u);
  const auto vc = c.to_vector<int32_t>();
  for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(vc[i], expected_randint(kSeed, 7, i, 0, 77));
}

TEST(Random, BernoulliComparesOneWordPerElement) {
  ox::Generator gen(kSeed);
  const ox::Tensor a = ox::bernoulli({9}, 0.3, {}, &gen);  // 3 blocks
  EXPECT_EQ(gen.offset(), 3u);
  const auto va = a.to_vector<float>();
  for (int64_t i = 0; i < 9; ++i)
    EXPECT_EQ(va[i], expected_bernoulli(kSeed, 0, i, 0.3) ? 1.0f : 0.0f) << i;
  // Per-element probabilities.
  const std::vector<double> p = {0.0, 0.9, 0.5, 1.0, 0.25, 0.75};
  const ox::Tensor b = ox::bernoulli(ox::tensor(p, {2, 3}), &gen);  // 2 blocks
  EXPECT_EQ(gen.offset(), 5u);
  EXPECT_EQ(b.dtype(), ox::kF64);
  EXPECT_EQ(b.shape(), (ox::Shape{2, 3}));
  const auto vb = b.to_vector<double>();
  for (int64_t i = 0; i < 6; ++i)
    EXPECT_EQ(vb[i], expected_bernoulli(kSeed, 3, i, p[i]) ? 1.0 : 0.0) << i;
}

TEST(Random, RandpermIsFisherYatesOverIntegerDraws) {
  for (int64_t n : {2, 3, 10, 101}) {
    ox::Generator gen(kSeed);
    gen.set_offset(4);
    const auto got = ox::randperm(n, {}, &gen).to_vector<int64_t>();
    EXPECT_EQ(gen.offset(), 4u + uint64_t(n + 1) / 2) << n;
    std::vector<int64_t> e(static_cast<size_t>(n));
    std::iota(e.begin(), e.end(), 0);
    for (int64_t i = n - 1; i > 0; --i) {
      const Words w = stream_block(kSeed, 4 + uint64_t(i / 2));
      std::swap(e[i], e[lane64(w, i % 2) % uint64_t(i + 1)]);
    }
    EXPECT_EQ(got, e) << n;
  }
}

TEST(Random, UniformAndNormalInPlaceUseTheDefaultGenerator) {
  ox::manual_seed(kSeed);
  ox::Tensor a = ox::empty({6}, ox::kF32);
  a.uniform_(-2.0, 3.0);
  EXPECT_EQ(ox::default_generator().offset(), 2u);
  ox::Tensor b = ox::empty({3}, ox::kF64);
  b.normal_(10.0, 0.5);
  EXPECT_EQ(ox::default_generator().offset(), 4u);
  const auto va = a.to_vector<float>();
  for (int64_t i = 0; i < 6; ++i) {
    const double e = -2.0 + 5.0 * double(expected_rand_f32(kSeed, 0, i));
    EXPECT_TRUE(close(va[i], e, 1.3e-6, 1e-5)) << i;
  }
  const auto vb = b.to_vector<double>();
  for (int64_t i = 0; i < 3; ++i) {
    const double e = 10.0 + 0.5 * expected_normal(kSeed, 2, i);
    EXPECT_TRUE(close(vb[i], e, 1e-7, 1e-7)) << i;
  }
}

TEST(Random, EmptyDrawsTakeNoBlocks) {
  ox::Generator gen(kSeed);
  EXPECT_EQ(ox::rand({0}, {}, &gen).numel(), 0);
  EXPECT_EQ(ox::randn({3, 0}, {}, &gen).numel(), 0);
  EXPECT_EQ(ox::randint(0, 5, {0}, {}, &gen).numel(), 0);
  EXPECT_EQ(ox::bernoulli({0}, 0.5, {}, &gen).numel(), 0);
  EXPECT_EQ(ox::randperm(0, {}, &gen).numel(), 0);
  EXPECT_EQ(gen.offset(), 0u);
  // A 0-d tensor is one element: one block.
  const ox::Tensor s = ox::rand({}, {}, &gen);
  EXPECT_EQ(s.numel(), 1);
  EXPECT_EQ(gen.offset(), 1u);
  EXPECT_EQ(s.item<float>(), expected_rand_f32(kSeed, 0, 0));
}

TEST(Random, LargeDrawMatchesTheLayoutEverywhere) {
  // Big enough to be split over threads; every element must still read its own words.
  ThreadGuard guard;
  ox::set_num_threads(3);
  ox::Generator gen(kSeed);
  gen.set_offset(1);
  const int64_t n = (int64_t{1} << 18) + 3;
  const auto v = ox::rand({n}, {}, &gen).to_vector<float>();
  int64_t mismatches = 0;
  for (int64_t i = 0; i < n; ++i) mismatches += v[i] != expected_rand_f32(kSeed, 1, i);
  EXPECT_EQ(mismatches, 0);
  EXPECT_EQ(gen.offset(), 1u + uint64_t(n + 3) / 4);
}

// ---- Seeding --------------------------------------------------------------------------------

TEST(Random, ManualSeedReproduces) {
  ox::manual_seed(42);
  EXPECT_EQ(ox::default_generator().seed(), 42u);
  EXPECT_EQ(ox::default_generator().offset(), 0u);
  const auto a1 = ox::rand({100}).to_vector<float>();
  const auto b1 = ox::randn({100}).to_vector<float>();
  const auto c1 = ox::randint(0, 1000, {100}).to_vector<int64_t>();
  ox::manual_seed(42);
  EXPECT_EQ(ox::rand({100}).to_vector<float>(), a1);
  EXPECT_EQ(ox::randn({100}).to_vector<float>(), b1);
  EXPECT_EQ(ox::randint(0, 1000, {100}).to_vector<int64_t>(), c1);
  // The stream moves on: a second draw without reseeding differs.
  EXPECT_NE(ox::rand({100}).to_vector<float>(), a1);
}

TEST(Random, DifferentSeedsDiffer) {
  ox::Generator g1(1), g2(2), g3(uint64_t{1} << 32);  // the high half of the seed counts too
  const auto a = ox::rand({64}, {}, &g1).to_vector<float>();
  const auto b = ox::rand({64}, {}, &g2).to_vector<float>();
  const auto c = ox::rand({64}, {}, &g3).to_vector<float>();
  int64_t same_ab = 0, same_ac = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    same_ab += a[i] == b[i];
    same_ac += a[i] == c[i];
  }
  EXPECT_LT(same_ab, 3);
  EXPECT_LT(same_ac, 3);
}

TEST(Random, ExplicitGeneratorMatchesTheDefaultOne) {
  ox::Generator gen(777);
  ox::manual_seed(777);
  EXPECT_EQ(ox::rand({33}, {}, &gen).to_vector<float>(), ox::rand({33}).to_vector<float>());
  EXPECT_EQ(ox::randn({17}, {.dtype = ox::kF64}, &gen).to_vector<double>(),
            ox::randn({17}, {.dtype = ox::kF64}).to_vector<double>());
  EXPECT_EQ(ox::randint(-3, 9, {21}, {}, &gen).to_vector<int64_t>(),
            ox::randint(-3, 9, {21}).to_vector<int64_t>());
  EXPECT_EQ(ox::randperm(50, {}, &gen).to_vector<int64_t>(), ox::randperm(50).to_vector<int64_t>());
  EXPECT_EQ(ox::bernoulli({13}, 0.4, {}, &gen).to_vector<float>(),
            ox::bernoulli({13}, 0.4).to_vector<float>());
  EXPECT_EQ(gen.offset(), ox::default_generator().offset());
  // Drawing from the explicit generator leaves the default one alone.
  const uint64_t before = ox::default_generator().offset();
  (void)ox::rand({100}, {}, &gen);
  EXPECT_EQ(ox::default_generator().offset(), before);
}

// ---- Thread counts --------------------------------------------------------------------------

template <class T>
bool bitwise_equal(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

struct LargeDraws {
  std::vector<float> rand32, randn32, bern, bern_t;
  std::vector<double> rand64, randn64;
  std::vector<int64_t> ints;
};

LargeDraws large_draws(int threads) {
  ox::set_num_threads(threads);
  constexpr int64_t n = int64_t{1} << 20;
  ox::Generator gen(kSeed);
  LargeDraws d;
  d.rand32 = ox::rand({n}, {}, &gen).to_vector<float>();
  d.rand64 = ox::rand({n}, {.dtype = ox::kF64}, &gen).to_vector<double>();
  d.randn32 = ox::randn({n}, {}, &gen).to_vector<float>();
  d.randn64 = ox::randn({n}, {.dtype = ox::kF64}, &gen).to_vector<double>();
  d.ints = ox::randint(-1000, 1000, {n}, {}, &gen).to_vector<int64_t>();
  d.bern = ox::bernoulli({n}, 0.3, {}, &gen).to_vector<float>();
  const ox::Tensor p = ox::rand({n}, {}, &gen);
  d.bern_t = ox::bernoulli(p, &gen).to_vector<float>();
  return d;
}

TEST(Threads, RandomDrawsAreBitwiseIndependentOfThreadCount) {
  ThreadGuard guard;
  const LargeDraws one = large_draws(1);
  for (int threads : {2, 3}) {
    const LargeDraws many = large_draws(threads);
    EXPECT_TRUE(bitwise_equal(one.rand32, many.rand32)) << threads;
    EXPECT_TRUE(bitwise_equal(one.rand64, many.rand64)) << threads;
    EXPECT_TRUE(bitwise_equal(one.randn32, many.randn32)) << threads;
    EXPECT_TRUE(bitwise_equal(one.randn64, many.randn64)) << threads;
    EXPECT_TRUE(bitwise_equal(one.ints, many.ints)) << threads;
    EXPECT_TRUE(bitwise_equal(one.bern, many.bern)) << threads;
    EXPECT_TRUE(bitwise_equal(one.bern_t, many.bern_t)) << threads;
  }
}

// ---- Layouts of in-place draws --------------------------------------------------------------

TEST(Random, InPlaceDrawsOnAStridedViewFillOnlyItsElements) {
  // base is 6 x 8; the view is its even columns, transposed: 4 x 6, not contiguous.
  for (bool normal : {false, true}) {
    ox::Tensor base = ox::full({6, 8}, -7.0, ox::kF32);
    ox::Tensor view = base.slice(1, 0, 8, 2).t();
    ASSERT_FALSE(view.is_contiguous());
    ASSERT_EQ(view.shape(), (ox::Shape{4, 6}));
    ox::manual_seed(kSeed);
    if (normal) {
      view.normal_(3.0, 2.0);
    } else {
      view.uniform_(2.0, 4.0);
    }
    EXPECT_EQ(ox::default_generator().offset(), normal ? 12u : 6u);
    const auto b = base.to_vector<float>();
    for (int64_t r = 0; r < 6; ++r) {
      for (int64_t c = 0; c < 8; ++c) {
        const float got = b[r * 8 + c];
        if (c % 2 == 1) {
          EXPECT_EQ(got, -7.0f) << r << "," << c;  // outside the view: untouched
          continue;
        }
        const int64_t k = (c / 2) * 6 + r;  // row-major index of view[c / 2][r]
        const double e = normal ? 3.0 + 2.0 * expected_normal(kSeed, 0, k)
                                : 2.0 + 2.0 * double(expected_rand_f32(kSeed, 0, k));
        EXPECT_TRUE(close(got, e, 1.3e-6, 1e-5)) << r << "," << c << ": " << got << " vs " << e;
      }
    }
  }
}

TEST(Random, InPlaceDrawOnAFlippedViewMatchesRowMajorOrder) {
  ox::Tensor base = ox::zeros({10}, ox::kF64);
  ox::Tensor flipped = base.flip({0});
  ox::manual_seed(kSeed);
  flipped.uniform_(0.0, 1.0);
  const auto b = base.to_vector<double>();
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(b[9 - i], expected_rand_f64(kSeed, 0, i)) << i;
}

// ---- Statistics (fixed seeds, bounds of many standard errors) -------------------------------

struct Moments {
  double mean = 0, var = 0, lo = INFINITY, hi = -INFINITY;
};
template <class T>
Moments moments(const std::vector<T>& v) {
  Moments m;
  for (T x : v) {
    m.mean += double(x);
    m.lo = std::min(m.lo, double(x));
    m.hi = std::max(m.hi, double(x));
  }
  m.mean /= double(v.size());
  for (T x : v) m.var += (double(x) - m.mean) * (double(x) - m.mean);
  m.var /= double(v.size());
  return m;
}

TEST(Random, UniformMoments) {
  ox::Generator gen(123);
  const auto v = ox::rand({1000000}, {}, &gen).to_vector<float>();
  const Moments m = moments(v);
  EXPECT_NEAR(m.mean, 0.5, 3e-3);        // standard error 2.9e-4
  EXPECT_NEAR(m.var, 1.0 / 12.0, 1e-3);  // standard error 7.5e-5
  EXPECT_GE(m.lo, 0.0);
  EXPECT_LT(m.hi, 1.0);
  EXPECT_LT(m.lo, 1e-4);
  EXPECT_GT(m.hi, 1.0 - 1e-4);
  // Ten equal bins each hold about a tenth.
  std::vector<int64_t> bins(10, 0);
  for (float x : v) ++bins[static_cast<size_t>(x * 10.0f)];
  for (int64_t c : bins) EXPECT_NEAR(double(c), 1e5, 3e3);  // standard error 300
}

TEST(Random, NormalMoments) {
  for (ox::DType dt : {ox::kF32, ox::kF64}) {
    ox::Generator gen(321);
    const auto v = ox::randn({1000000}, {.dtype = dt}, &gen).to_vector<double>();
    const Moments m = moments(v);
    EXPECT_NEAR(m.mean, 0.0, 6e-3);  // standard error 1e-3
    EXPECT_NEAR(m.var, 1.0, 1e-2);   // standard error 1.4e-3
    EXPECT_TRUE(std::isfinite(m.lo) && std::isfinite(m.hi));
    int64_t within1 = 0, within2 = 0;
    double third = 0;
    for (double x : v) {
      within1 += std::fabs(x) < 1.0;
      within2 += std::fabs(x) < 2.0;
      third += x * x * x;
    }
    EXPECT_NEAR(double(within1) / 1e6, 0.682689, 3e-3);  // P(|Z| < 1)
    EXPECT_NEAR(double(within2) / 1e6, 0.954500, 2e-3);  // P(|Z| < 2)
    EXPECT_NEAR(third / 1e6, 0.0, 3e-2);                 // skewness, standard error 3.9e-3
  }
}

TEST(Random, RandintCoversTheRangeAndStaysInside) {
  ox::Generator gen(99);
  const auto v = ox::randint(-3, 7, {100000}, {}, &gen).to_vector<int64_t>();
  std::vector<int64_t> counts(10, 0);
  for (int64_t x : v) {
    ASSERT_GE(x, -3);
    ASSERT_LT(x, 7);
    ++counts[static_cast<size_t>(x + 3)];
  }
  for (int64_t c : counts) EXPECT_NEAR(double(c), 1e4, 600.0);  // standard error 95
  // A range of one value, and the edges of a small dtype.
  for (int64_t x : ox::randint(5, 6, {50}, {}, &gen).to_vector<int64_t>()) EXPECT_EQ(x, 5);
  const auto u8 = ox::randint(0, 256, {20000}, {.dtype = ox::kU8}, &gen).to_vector<int64_t>();
  EXPECT_EQ(*std::min_element(u8.begin(), u8.end()), 0);
  EXPECT_EQ(*std::max_element(u8.begin(), u8.end()), 255);
  const auto i8 = ox::randint(-128, 128, {20000}, {.dtype = ox::kI8}, &gen).to_vector<int64_t>();
  EXPECT_EQ(*std::min_element(i8.begin(), i8.end()), -128);
  EXPECT_EQ(*std::max_element(i8.begin(), i8.end()), 127);
}

TEST(Random, BernoulliFrequencies) {
  ox::Generator gen(2024);
  const auto v = ox::bernoulli({1000000}, 0.3, {}, &gen).to_vector<float>();
  int64_t ones = 0;
  for (float x : v) {
    ASSERT_TRUE(x == 0.0f || x == 1.0f);
    ones += x == 1.0f;
  }
  EXPECT_NEAR(double(ones) / 1e6, 0.3, 3e-3);  // standard error 4.6e-4
  for (float x : ox::bernoulli({1000}, 0.0, {}, &gen).to_vector<float>()) EXPECT_EQ(x, 0.0f);
  for (float x : ox::bernoulli({1000}, 1.0, {}, &gen).to_vector<float>()) EXPECT_EQ(x, 1.0f);
  // Per-element probabilities: even elements 0.1, odd 0.9.
  std::vector<float> p(200000);
  for (size_t i = 0; i < p.size(); ++i) p[i] = i % 2 ? 0.9f : 0.1f;
  const auto b = ox::bernoulli(ox::tensor(p), &gen).to_vector<float>();
  int64_t even = 0, odd = 0;
  for (size_t i = 0; i < b.size(); ++i) (i % 2 ? odd : even) += b[i] == 1.0f;
  EXPECT_NEAR(double(even) / 1e5, 0.1, 5e-3);  // standard error 9.5e-4
  EXPECT_NEAR(double(odd) / 1e5, 0.9, 5e-3);
}

TEST(Random, RandpermIsAPermutation) {
  ox::Generator gen(5);
  for (int64_t n : {0, 1, 2, 1000}) {
    const ox::Tensor t = ox::randperm(n, {}, &gen);
    EXPECT_EQ(t.dtype(), ox::kI64);
    EXPECT_EQ(t.shape(), (ox::Shape{n}));
    auto v = t.to_vector<int64_t>();
    const bool identity = std::is_sorted(v.begin(), v.end());
    std::sort(v.begin(), v.end());
    std::vector<int64_t> e(static_cast<size_t>(n));
    std::iota(e.begin(), e.end(), 0);
    EXPECT_EQ(v, e) << n;
    if (n == 1000) {
      EXPECT_FALSE(identity);
    }
  }
  // Both orders of two elements happen.
  bool seen[2] = {false, false};
  for (int k = 0; k < 64; ++k) seen[ox::randperm(2, {}, &gen).to_vector<int64_t>()[0]] = true;
  EXPECT_TRUE(seen[0] && seen[1]);
  // Other dtypes, at the edge of their range.
  auto u8 = ox::randperm(256, {.dtype = ox::kU8}, &gen).to_vector<int64_t>();
  std::sort(u8.begin(), u8.end());
  for (int64_t i = 0; i < 256; ++i) EXPECT_EQ(u8[i], i);
  auto f32 = ox::randperm(100, {.dtype = ox::kF32}, &gen).to_vector<float>();
  std::sort(f32.begin(), f32.end());
  for (int64_t i = 0; i < 100; ++i) EXPECT_EQ(f32[i], float(i));
}

TEST(Random, LowPrecisionAndF64RandStayInUnitInterval) {
  const int64_t n = int64_t{1} << 20;
  ox::Generator ref_gen(31337);
  const auto ref = ox::rand({n}, {}, &ref_gen).to_vector<float>();
  for (ox::DType dt : {ox::kF16, ox::kBF16, ox::kF64}) {
    ox::Generator gen(31337);
    const ox::Tensor t = ox::rand({n}, {.dtype = dt}, &gen);
    EXPECT_EQ(t.dtype(), dt);
    const auto v = t.to_vector<double>();
    const Moments m = moments(v);
    EXPECT_GE(m.lo, 0.0) << dt;
    EXPECT_LT(m.hi, 1.0) << dt;  // rounding to the dtype must not reach 1
    EXPECT_NEAR(m.mean, 0.5, 3e-3) << dt;
    if (dt == ox::kF64) continue;
    // f16/bf16 draws read the same words as f32 ones, rounded to the narrower type.
    const double atol = dt == ox::kF16 ? 1e-3 : 1.6e-2;
    int64_t far = 0;
    for (int64_t i = 0; i < n; ++i) far += !close(v[i], ref[i], atol, 1e-5);
    EXPECT_EQ(far, 0) << dt;
  }
}

TEST(Random, UniformRangeStaysBelowItsUpperBound) {
  // [from, to) in every floating dtype, even where the top draws would round up to `to`.
  for (ox::DType dt : {ox::kF32, ox::kF16, ox::kBF16}) {
    ox::manual_seed(8);
    ox::Tensor t = ox::empty({int64_t{1} << 20}, dt);
    t.uniform_(1.0, 2.0);
    const Moments m = moments(t.to_vector<double>());
    EXPECT_GE(m.lo, 1.0) << dt;
    EXPECT_LT(m.hi, 2.0) << dt;
    EXPECT_NEAR(m.mean, 1.5, 1e-2) << dt;
  }
}

TEST(Random, F32UniformRangeStaysBelowItsUpperBoundAtTheTopWord) {
  // Find a block of the stream whose word 0 has its top 24 bits set: unit value 1 - 2^-24, so
  // 1 + u lies halfway between 2 - 2^-23 and 2 and rounds (to even) up to 2 in f32.
  uint64_t index = 0;
  while ((stream_block(kSeed, index).v[0] >> 8) != 0xffffffu) ++index;
  ox::Generator gen(kSeed);
  gen.set_offset(index);
  EXPECT_EQ(ox::rand({1}, {}, &gen).item<float>(), 1.0f - 0x1p-24f);  // [0, 1) itself is exact
  ox::manual_seed(kSeed);
  ox::default_generator().set_offset(index);
  ox::Tensor t = ox::empty({4}, ox::kF32);
  t.uniform_(1.0, 2.0);
  const float top = t.to_vector<float>()[0];
  EXPECT_GE(top, 1.0f);
  EXPECT_LT(top, 2.0f);
  EXPECT_EQ(top, 2.0f - 0x1p-23f);  // the largest f32 below 2
}

// ---- Typed errors ---------------------------------------------------------------------------

TEST(Random, BadArgumentsGiveTypedErrors) {
  using ox::ErrorKind;
  EXPECT_EQ(caught([] { ox::randint(0, 1000, {4}, {.dtype = ox::kU8}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randint(-1, 10, {4}, {.dtype = ox::kU8}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randint(0, 129, {4}, {.dtype = ox::kI8}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randint(0, 2, {4}, {.dtype = ox::kBool}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randint(5, 5, {4}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randint(6, 5, {4}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randint(0, {4}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randperm(-1); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randperm(257, {.dtype = ox::kU8}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::randperm(2, {.dtype = ox::kBool}); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::rand({3}, {.dtype = ox::kI32}); }).kind(), ErrorKind::DType);
  EXPECT_EQ(caught([] { ox::rand({3}, {.dtype = ox::kBool}); }).kind(), ErrorKind::DType);
  EXPECT_EQ(caught([] { ox::randn({3}, {.dtype = ox::kI64}); }).kind(), ErrorKind::DType);
  EXPECT_EQ(caught([] { ox::bernoulli({3}, 0.5, {.dtype = ox::kU8}); }).kind(), ErrorKind::DType);
  EXPECT_EQ(caught([] { ox::zeros({3}, ox::kI32).uniform_(); }).kind(), ErrorKind::DType);
  EXPECT_EQ(caught([] { ox::zeros({3}, ox::kI64).normal_(); }).kind(), ErrorKind::DType);
  EXPECT_EQ(caught([] { ox::bernoulli({3}, 1.5); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::bernoulli({3}, -0.1); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::bernoulli({3}, std::nan("")); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] {
              ox::bernoulli(ox::tensor({0.5, 1.2}, {.dtype = ox::kF64}));
            }).kind(),
            ErrorKind::Value);
  EXPECT_EQ(caught([] {
              ox::bernoulli(ox::tensor({0.5, -0.5}, {.dtype = ox::kF64}));
            }).kind(),
            ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::bernoulli(ox::Tensor()); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::zeros({3}).uniform_(1.0, 0.0); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::zeros({3}).uniform_(0.0, INFINITY); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::zeros({3}).normal_(0.0, -1.0); }).kind(), ErrorKind::Value);
  EXPECT_EQ(caught([] { ox::zeros({3}).normal_(std::nan(""), 1.0); }).kind(), ErrorKind::Value);
}

TEST(Random, RefusedDrawsDoNotAdvanceTheGenerator) {
  ox::Generator gen(kSeed);
  (void)caught([&] { ox::rand({8}, {.dtype = ox::kI32}, &gen); });
  (void)caught([&] { ox::randint(3, 3, {8}, {}, &gen); });
  (void)caught([&] { ox::bernoulli({8}, 2.0, {}, &gen); });
  (void)caught([&] { ox::randperm(300, {.dtype = ox::kI8}, &gen); });
  EXPECT_EQ(gen.offset(), 0u);
}

}  // namespace
