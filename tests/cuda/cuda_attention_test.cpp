// CUDA attention (backend/cuda/cuda_attention.h) vs a double-precision host reference.
//
// Every case builds a paged device pool with shuffled blocks (pool memory starts as NaN bytes and
// unused table slots point at a never-written block, so a read outside the keys a row may see
// shows up as NaN), stores random K/V through kv_store (checked bit for bit by reading the pool
// back), runs Attention::run on random queries and compares out and lse with the reference
// computed from the same (f16-rounded when the cache is F16) values: |gpu - ref| <= 1e-4 *
// (1 + |ref|). attention_probs is checked on a few rows against exp(score - lse_ref).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "backend/cuda/cuda_attention.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device_buffer.h"
#include "core/error.h"
#include "cuda_test_support.h"
#include "tensor/fp16.h"

namespace fluoro::cuda {
namespace {

struct Tok {
    int seq;
    int pos;
};

struct Case {
    std::string name;
    int n_head = 9, n_head_kv = 3, dk = 64, dv = 64;
    KvElem elem = KvElem::F16;
    int bt = 16;
    int window = 0;
    float softcap = 0.0f;
    float qmul = 1.0f;      // queries drawn from U(-qmul, qmul)
    int row_pad_bytes = 0;  // extra bytes per pool row (4 makes rows not 16-byte aligned)
    std::vector<int> ctx;   // keys stored per sequence: positions 0 .. ctx-1
    std::vector<Tok> toks;  // the query batch
    bool consecutive = false;
    bool with_lse = true;
    bool check_probs = true;
    bool reserve = true;  // false: run() must grow the split scratch itself
    uint32_t seed = 1;
};

Case prefill(std::string name, int n, int p0) {
    Case c;
    c.name = std::move(name);
    c.ctx = {p0 + n};
    for (int i = 0; i < n; ++i) c.toks.push_back({0, p0 + i});
    c.consecutive = true;
    return c;
}

Case decode(std::string name, int ctx) {
    Case c;
    c.name = std::move(name);
    c.ctx = {ctx};
    c.toks = {{0, ctx - 1}};
    c.consecutive = true;
    return c;
}

const char* elem_name(KvElem e) {
    return e == KvElem::F16 ? "f16" : "f32";
}

std::string describe(const Case& c) {
    std::ostringstream os;
    os << "case '" << c.name << "' (heads " << c.n_head << "/" << c.n_head_kv << ", dk " << c.dk
       << ", dv " << c.dv << ", " << elem_name(c.elem) << ", bt " << c.bt << ", window " << c.window
       << ", softcap " << c.softcap << ", qmul " << c.qmul << ", n_tok " << c.toks.size()
       << (c.consecutive ? ", consecutive" : ", mixed") << ")";
    return os.str();
}

float round_elem(KvElem e, float x) {
    return e == KvElem::F16 ? fp16_to_fp32(fp32_to_fp16(x)) : x;
}

template <typename T>
DeviceBuffer<T> upload(const std::vector<T>& host) {
    DeviceBuffer<T> d(host.size());
    d.copy_from_host(host);
    return d;
}

bool close(double gpu, double ref, double tol) {
    return std::abs(gpu - ref) <= tol * (1.0 + std::abs(ref));
}

void run_case(const Case& c) {
    SCOPED_TRACE(describe(c));
    std::mt19937 rng(c.seed);
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    const int n_seq = int(c.ctx.size());
    const int64_t nk = int64_t(c.n_head_kv) * c.dk, nv = int64_t(c.n_head_kv) * c.dv;
    const size_t esz = c.elem == KvElem::F16 ? 2 : 4;
    const int64_t k_row_bytes = nk * int64_t(esz) + c.row_pad_bytes;
    const int64_t v_row_bytes = nv * int64_t(esz) + c.row_pad_bytes;

    // Block table: every sequence's blocks drawn from a shuffled pool; one spare block that is
    // never written fills the unused table slots.
    int pitch = 0, used_blocks = 0;
    for (int s = 0; s < n_seq; ++s) {
        const int nb = (c.ctx[size_t(s)] + c.bt - 1) / c.bt;
        pitch = std::max(pitch, nb);
        used_blocks += nb;
    }
    pitch += 1;
    const int n_blocks = used_blocks + 3;
    std::vector<int32_t> perm(static_cast<size_t>(n_blocks));
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    const int32_t spare = perm.back();
    std::vector<int32_t> tables(static_cast<size_t>(n_seq) * static_cast<size_t>(pitch), spare);
    {
        size_t next = 0;
        for (int s = 0; s < n_seq; ++s) {
            const int nb = (c.ctx[size_t(s)] + c.bt - 1) / c.bt;
            for (int b = 0; b < nb; ++b) tables[size_t(s * pitch + b)] = perm[next++];
        }
    }
    const auto pool_row = [&](int s, int j) {
        return int64_t(tables[size_t(s * pitch + j / c.bt)]) * c.bt + j % c.bt;
    };
    const int64_t pool_rows = int64_t(n_blocks) * c.bt;
    DeviceBuffer<std::byte> kpool(static_cast<size_t>(pool_rows * k_row_bytes));
    DeviceBuffer<std::byte> vpool(static_cast<size_t>(pool_rows * v_row_bytes));
    FLUORO_CUDA_CHECK(cudaMemset(kpool.data(), 0xFF, kpool.bytes()));  // NaN in f16 and f32
    FLUORO_CUDA_CHECK(cudaMemset(vpool.data(), 0xFF, vpool.bytes()));
    const DeviceBuffer<int32_t> d_tables = upload(tables);

    KvLayerDev layer;
    layer.k = kpool.data();
    layer.v = vpool.data();
    layer.k_row_bytes = size_t(k_row_bytes);
    layer.v_row_bytes = size_t(v_row_bytes);
    layer.elem = c.elem;

    AttnShape shape;
    shape.n_head = c.n_head;
    shape.n_head_kv = c.n_head_kv;
    shape.head_dim_k = c.dk;
    shape.head_dim_v = c.dv;
    shape.scale = 1.0f / std::sqrt(float(c.dk));
    shape.window = c.window;
    shape.softcap = c.softcap;

    // K/V of every sequence through kv_store (one batch per sequence); host keeps the values
    // the cache should hold.
    std::vector<std::vector<float>> kh(static_cast<size_t>(n_seq)), vh(static_cast<size_t>(n_seq));
    for (int s = 0; s < n_seq; ++s) {
        const int n = c.ctx[size_t(s)];
        std::vector<float> k(static_cast<size_t>(n * nk)), v(static_cast<size_t>(n * nv));
        for (auto& x : k) x = uni(rng);
        for (auto& x : v) x = uni(rng);
        std::vector<int32_t> pos(static_cast<size_t>(n)), seq(static_cast<size_t>(n), s),
            slot(static_cast<size_t>(n));
        for (int j = 0; j < n; ++j) {
            pos[size_t(j)] = j;
            slot[size_t(j)] = int32_t(pool_row(s, j));
        }
        const auto dk_ = upload(k), dv_ = upload(v);
        const auto dpos = upload(pos), dseq = upload(seq), dslot = upload(slot);
        AttnBatchDev b;
        b.n_tok = n;
        b.pos = dpos.data();
        b.seq = dseq.data();
        b.slot_row = dslot.data();
        b.tables = d_tables.data();
        b.table_pitch = pitch;
        b.block_tokens = c.bt;
        b.max_pos = n - 1;
        b.same_seq_consecutive = true;
        kv_store(layer, b, shape, dk_.data(), dv_.data(), nullptr);
        FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
        for (auto& x : k) x = round_elem(c.elem, x);
        for (auto& x : v) x = round_elem(c.elem, x);
        kh[size_t(s)] = std::move(k);
        vh[size_t(s)] = std::move(v);
    }

    // kv_store: the pool rows hold exactly the converted values.
    {
        std::vector<std::byte> kp(kpool.size()), vp(vpool.size());
        kpool.copy_to_host(kp);
        vpool.copy_to_host(vp);
        const auto elem_at = [&](const std::vector<std::byte>& pool, int64_t row_bytes, int64_t row,
                                 int64_t e) {
            const std::byte* at = pool.data() + row * row_bytes + e * int64_t(esz);
            if (c.elem == KvElem::F16) {
                uint16_t h;
                std::memcpy(&h, at, 2);
                return fp16_to_fp32(h);
            }
            float f;
            std::memcpy(&f, at, 4);
            return f;
        };
        for (int s = 0; s < n_seq; ++s)
            for (int j = 0; j < c.ctx[size_t(s)]; ++j) {
                const int64_t row = pool_row(s, j);
                for (int64_t e = 0; e < nk + nv; ++e) {
                    const bool is_k = e < nk;
                    const int64_t ee = is_k ? e : e - nk;
                    const float want = is_k ? kh[size_t(s)][size_t(j * nk + ee)]
                                            : vh[size_t(s)][size_t(j * nv + ee)];
                    const float got = is_k ? elem_at(kp, k_row_bytes, row, ee)
                                           : elem_at(vp, v_row_bytes, row, ee);
                    if (std::memcmp(&want, &got, sizeof want) != 0) {
                        ADD_FAILURE() << "kv_store: seq " << s << " key " << j << " pool row "
                                      << row << (is_k ? " K" : " V") << " element " << ee
                                      << ": pool holds " << got << ", expected " << want;
                        return;
                    }
                }
            }
    }

    // The query batch.
    const int64_t n_tok = int64_t(c.toks.size());
    const int64_t qw = int64_t(c.n_head) * c.dk, ow = int64_t(c.n_head) * c.dv;
    std::vector<float> q(static_cast<size_t>(n_tok * qw));
    for (auto& x : q) x = c.qmul * uni(rng);
    std::vector<int32_t> pos(static_cast<size_t>(n_tok)), seq(static_cast<size_t>(n_tok)),
        slot(static_cast<size_t>(n_tok));
    int32_t max_pos = 0;
    for (int64_t t = 0; t < n_tok; ++t) {
        pos[size_t(t)] = c.toks[size_t(t)].pos;
        seq[size_t(t)] = c.toks[size_t(t)].seq;
        slot[size_t(t)] = int32_t(pool_row(seq[size_t(t)], pos[size_t(t)]));
        max_pos = std::max(max_pos, pos[size_t(t)]);
    }
    const auto d_q = upload(q);
    const auto dpos = upload(pos), dseq = upload(seq), dslot = upload(slot);
    DeviceBuffer<float> d_out(static_cast<size_t>(n_tok * ow)),
        d_lse(static_cast<size_t>(n_tok * c.n_head));
    FLUORO_CUDA_CHECK(cudaMemset(d_out.data(), 0xFF, d_out.bytes()));
    FLUORO_CUDA_CHECK(cudaMemset(d_lse.data(), 0xFF, d_lse.bytes()));
    AttnBatchDev batch;
    batch.n_tok = n_tok;
    batch.pos = dpos.data();
    batch.seq = dseq.data();
    batch.slot_row = dslot.data();
    batch.tables = d_tables.data();
    batch.table_pitch = pitch;
    batch.block_tokens = c.bt;
    batch.max_pos = max_pos;
    batch.same_seq_consecutive = c.consecutive;

    Attention attn;
    if (c.reserve) attn.reserve(n_tok, c.n_head, c.dv, max_pos + 1);
    attn.run(shape, layer, batch, d_q.data(), d_out.data(), c.with_lse ? d_lse.data() : nullptr,
             nullptr);
    FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<float> out(d_out.size()), lse(d_lse.size());
    d_out.copy_to_host(out);
    d_lse.copy_to_host(lse);

    // Reference, and the comparison (first mismatch of out and of lse reported).
    const int group = c.n_head / c.n_head_kv;
    const auto ref_scores = [&](int64_t t, int h, int lo, std::vector<double>& sc) {
        const int s = seq[size_t(t)], p = pos[size_t(t)], kvh = h / group;
        sc.assign(size_t(p - lo + 1), 0.0);
        for (int j = lo; j <= p; ++j) {
            double dot = 0.0;
            for (int d = 0; d < c.dk; ++d)
                dot += double(q[size_t(t * qw + h * c.dk + d)]) *
                       double(kh[size_t(s)][size_t(j * nk + kvh * c.dk + d)]);
            double sc_j = dot * double(shape.scale);
            if (c.softcap > 0) sc_j = double(c.softcap) * std::tanh(sc_j / double(c.softcap));
            sc[size_t(j - lo)] = sc_j;
        }
    };
    bool out_bad = false, lse_bad = false;
    std::vector<double> ref_lse(static_cast<size_t>(n_tok * c.n_head));
    std::vector<double> sc, o(static_cast<size_t>(c.dv));
    for (int64_t t = 0; t < n_tok; ++t) {
        const int s = seq[size_t(t)], p = pos[size_t(t)];
        const int lo = c.window > 0 ? std::max(0, p - c.window + 1) : 0;
        for (int h = 0; h < c.n_head; ++h) {
            const int kvh = h / group;
            ref_scores(t, h, lo, sc);
            const double m = *std::max_element(sc.begin(), sc.end());
            double sum = 0.0;
            std::fill(o.begin(), o.end(), 0.0);
            for (int j = lo; j <= p; ++j) {
                const double w = std::exp(sc[size_t(j - lo)] - m);
                sum += w;
                for (int d = 0; d < c.dv; ++d)
                    o[size_t(d)] += w * double(vh[size_t(s)][size_t(j * nv + kvh * c.dv + d)]);
            }
            const double rl = m + std::log(sum);
            ref_lse[size_t(t * c.n_head + h)] = rl;
            for (int d = 0; d < c.dv && !out_bad; ++d) {
                const double ref = o[size_t(d)] / sum;
                const float got = out[size_t(t * ow + h * c.dv + d)];
                if (!std::isfinite(got) || !close(got, ref, 1e-4)) {
                    out_bad = true;
                    ADD_FAILURE() << "out mismatch: token " << t << " (seq " << s << " pos " << p
                                  << ") head " << h << " (kv head " << kvh << ") element " << d
                                  << ": gpu " << got << " ref " << ref << " (keys " << lo << ".."
                                  << p << ")";
                }
            }
            if (c.with_lse && !lse_bad) {
                const float got = lse[size_t(t * c.n_head + h)];
                if (!std::isfinite(got) || !close(got, rl, 1e-4)) {
                    lse_bad = true;
                    ADD_FAILURE() << "lse mismatch: token " << t << " (seq " << s << " pos " << p
                                  << ") head " << h << ": gpu " << got << " ref " << rl;
                }
            }
        }
    }
    if (out_bad || (c.with_lse && lse_bad) || !c.with_lse || !c.check_probs) return;

    // attention_probs on the first and last token, first and last head, over all keys up to
    // pos + 3 (the keys past pos must come back 0 and must not be read).
    for (const int64_t t : {int64_t(0), n_tok - 1}) {
        for (const int h : {0, c.n_head - 1}) {
            const int s = seq[size_t(t)], p = pos[size_t(t)];
            const int lo = c.window > 0 ? std::max(0, p - c.window + 1) : 0;
            const int64_t key_begin = 0, key_end = p + 4;
            DeviceBuffer<float> d_probs(static_cast<size_t>(key_end - key_begin));
            attention_probs(shape, layer, d_tables.data() + s * pitch, c.bt, p, h / group,
                            d_q.data() + t * qw + h * c.dk, lse[size_t(t * c.n_head + h)],
                            key_begin, key_end, d_probs.data(), nullptr);
            FLUORO_CUDA_CHECK(cudaDeviceSynchronize());
            std::vector<float> probs(d_probs.size());
            d_probs.copy_to_host(probs);
            ref_scores(t, h, lo, sc);
            const double rl = ref_lse[size_t(t * c.n_head + h)];
            double total = 0.0;
            for (int64_t j = key_begin; j < key_end; ++j) {
                const double ref = (j >= lo && j <= p) ? std::exp(sc[size_t(j - lo)] - rl) : 0.0;
                const float got = probs[size_t(j - key_begin)];
                total += got;
                if (!std::isfinite(got) || std::abs(got - ref) > 1e-5) {
                    ADD_FAILURE() << "attention_probs mismatch: token " << t << " (seq " << s
                                  << " pos " << p << ") head " << h << " key " << j << ": gpu "
                                  << got << " ref " << ref;
                    return;
                }
            }
            EXPECT_NEAR(total, 1.0, 1e-4)
                << "attention_probs of token " << t << " head " << h << " do not sum to 1";
        }
    }
}

using CudaAttention = test::CudaTest<>;

TEST_F(CudaAttention, KvStoreAndPrefillSmallF32) {
    Case c = prefill("prefill 5 f32 bt 7", 5, 0);
    c.elem = KvElem::F32;
    c.bt = 7;
    run_case(c);
}

TEST_F(CudaAttention, PrefillSmolF16) {
    for (const int n : {1, 5, 17, 100, 300}) run_case(prefill("prefill from 0", n, 0));
    for (const int n : {17, 100}) run_case(prefill("prefill from 37", n, 37));
    // A short chunk late in a long context: split key ranges with several rows per block.
    run_case(prefill("prefill 5 from 4000", 5, 4000));
    run_case(prefill("prefill 17 from 3000", 17, 3000));
}

TEST_F(CudaAttention, PrefillGemmaF32Bt7) {
    for (const int n : {5, 100, 300}) {
        Case c = prefill("gemma prefill f32", n, n == 100 ? 50 : 0);
        c.n_head = 4;
        c.n_head_kv = 1;
        c.dk = c.dv = 256;
        c.elem = KvElem::F32;
        c.bt = 7;
        run_case(c);
    }
}

TEST_F(CudaAttention, SlidingWindow) {
    {
        Case c = prefill("gemma window 512 across the boundary", 300, 400);
        c.n_head = 4;
        c.n_head_kv = 1;
        c.dk = c.dv = 256;
        c.window = 512;
        run_case(c);
    }
    for (const int ctx : {1000, 5000}) {
        Case c = decode("gemma decode window 512", ctx);
        c.n_head = 4;
        c.n_head_kv = 1;
        c.dk = c.dv = 256;
        c.window = 512;
        run_case(c);
    }
    {
        Case c = prefill("window 7 bt 7", 100, 20);
        c.window = 7;
        c.bt = 7;
        run_case(c);
    }
    {
        Case c = decode("decode window 7", 1000);
        c.window = 7;
        run_case(c);
    }
}

TEST_F(CudaAttention, DecodeSmolF16) {
    for (const int ctx : {1, 31, 32, 33, 1000, 5000}) run_case(decode("smol decode", ctx));
}

TEST_F(CudaAttention, DecodeGemma) {
    for (const int ctx : {1, 33, 1000, 5000}) {
        Case c = decode("gemma decode", ctx);
        c.n_head = 4;
        c.n_head_kv = 1;
        c.dk = c.dv = 256;
        c.bt = 7;
        run_case(c);
    }
}

TEST_F(CudaAttention, SoftcapAndLargeScale) {
    for (const float softcap : {0.0f, 50.0f}) {
        Case p = prefill("large scale prefill", 100, 10);
        p.qmul = 30.0f;
        p.softcap = softcap;
        run_case(p);
        Case d = decode("large scale decode", 1000);
        d.qmul = 30.0f;
        d.softcap = softcap;
        run_case(d);
        Case g = decode("gemma large scale decode", 600);
        g.n_head = 4;
        g.n_head_kv = 1;
        g.dk = g.dv = 256;
        g.qmul = 30.0f;
        g.softcap = softcap;
        run_case(g);
    }
}

TEST_F(CudaAttention, MixedBatchOfTwoSequences) {
    Case c;
    c.name = "two sequences interleaved";
    c.ctx = {700, 40};
    c.toks = {{0, 699}, {1, 10}, {1, 11}, {0, 650}, {1, 39}, {1, 12}, {0, 0}, {1, 20}};
    c.consecutive = false;
    run_case(c);
    c.name = "two sequences, f32, unaligned rows, window 16";
    c.elem = KvElem::F32;
    c.row_pad_bytes = 4;
    c.window = 16;
    c.bt = 7;
    run_case(c);
    c.name = "two sequences, f16, unaligned rows, no lse";
    c.elem = KvElem::F16;
    c.row_pad_bytes = 2;
    c.window = 0;
    c.with_lse = false;
    run_case(c);
}

TEST_F(CudaAttention, OtherHeadShapes) {
    struct Shape {
        int n_head, n_head_kv, dk, dv;
    };
    for (const Shape s : {Shape{4, 2, 96, 96}, Shape{2, 2, 128, 128}, Shape{8, 1, 32, 32},
                          Shape{4, 1, 64, 128}, Shape{32, 1, 256, 256}}) {
        for (const bool dec : {false, true}) {
            Case c =
                dec ? decode("other shape decode", 700) : prefill("other shape prefill", 40, 3);
            c.n_head = s.n_head;
            c.n_head_kv = s.n_head_kv;
            c.dk = s.dk;
            c.dv = s.dv;
            run_case(c);
        }
    }
}

TEST_F(CudaAttention, ScratchGrowsWithoutReserve) {
    Case c = decode("decode without reserve", 3000);
    c.reserve = false;
    run_case(c);
    Case p = prefill("prefill without reserve", 9, 2000);
    p.reserve = false;
    run_case(p);
}

// Shape errors come from validation before any CUDA call, so these run without a GPU too.
TEST(CudaAttentionErrors, BadShapesThrowNamingTheValues) {
    Attention attn;
    AttnShape s;
    s.n_head = 9;
    s.n_head_kv = 4;
    s.head_dim_k = s.head_dim_v = 64;
    KvLayerDev layer;
    AttnBatchDev batch;
    batch.n_tok = 1;
    batch.block_tokens = 16;
    try {
        attn.run(s, layer, batch, nullptr, nullptr, nullptr, nullptr);
        FAIL() << "n_head 9 / n_head_kv 4 accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("n_head 9"), std::string::npos) << e.what();
    }
    s.n_head_kv = 3;
    s.head_dim_k = 48;
    try {
        attn.run(s, layer, batch, nullptr, nullptr, nullptr, nullptr);
        FAIL() << "head_dim_k 48 accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("head_dim_k 48"), std::string::npos) << e.what();
    }
    s.head_dim_k = 64;
    s.head_dim_v = 512;
    EXPECT_THROW(kv_store(layer, batch, s, nullptr, nullptr, nullptr), Error);
    EXPECT_THROW(
        attention_probs(s, layer, nullptr, 16, 0, 0, nullptr, 0.0f, 0, 1, nullptr, nullptr), Error);
}

}  // namespace
}  // namespace fluoro::cuda
