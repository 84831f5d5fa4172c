// Synthetic telemetry for the panel tests: small, deterministic event sequences shaped like what
// the engine emits (engine/telemetry/events.h), built in code so every test states its inputs.
#pragma once

#include <QDir>
#include <QImage>
#include <QPainter>
#include <QString>
#include <QWidget>
#include <cmath>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::test {

inline RunStarted run_started(uint64_t run, std::vector<std::string> pieces) {
    RunStarted r;
    r.run = run;
    r.conversation = 1;
    r.user_text = "Why is the sky blue?";
    r.model_name = "synthetic";
    r.prompt_pieces = std::move(pieces);
    r.prompt_tokens = int64_t(r.prompt_pieces.size());
    for (size_t i = 0; i < r.prompt_pieces.size(); ++i) r.prompt_ids.push_back(int32_t(100 + i));
    r.level = TelemetryLevel::Full;
    return r;
}

inline std::vector<std::string> chat_prompt() {
    return {"<|im_start|>", "user", "\n",         "Why", " is",          " the",      " sky",
            " blue",        "?",    "<|im_end|>", "\n",  "<|im_start|>", "assistant", "\n"};
}

// Token `index` with probability `p` and alternatives (id, probability), most likely first.
inline TokenEvent token(uint64_t run, int64_t index, int32_t id, std::string piece, double p,
                        std::vector<std::pair<int32_t, double>> top = {}) {
    TokenEvent t;
    t.run = run;
    t.index = index;
    t.id = id;
    t.piece = std::move(piece);
    t.logprob = float(std::log(p));
    for (auto [tid, tp] : top) t.top.push_back({tid, float(std::log(tp))});
    t.t_ns = 20'000'000 + index * 15'000'000;
    return t;
}

inline StepEvent step(uint64_t run, int64_t index, StepPhase phase, int64_t tokens,
                      int64_t start_ns, int64_t end_ns, bool op_times = true) {
    StepEvent s;
    s.run = run;
    s.index = index;
    s.phase = phase;
    s.tokens = tokens;
    s.start_ns = start_ns;
    s.end_ns = end_ns;
    if (op_times) {
        // matmul 50%, attention 20%, norm 5%, ffn 10%, lm_head 5%, other 2%, sampling 5% (97%)
        const int64_t d = end_ns - start_ns;
        const int pct[kTimeCategories] = {50, 20, 5, 10, 5, 2, 5};
        for (size_t c = 0; c < kTimeCategories; ++c) s.op_ns[c] = d * pct[c] / 100;
    }
    return s;
}

// Causal attention of `n_rows` query rows ending at key n_cols - 1: row r attends to keys [0,
// first_row + r], weight falling off with distance plus a sink on key 0, rows summing to 1.
inline std::shared_ptr<const AttentionSnapshot> attention(uint64_t run, int64_t step_index,
                                                          int layer, int head, int64_t n_rows,
                                                          int64_t n_cols) {
    auto s = std::make_shared<AttentionSnapshot>();
    s->run = run;
    s->step = step_index;
    s->layer = layer;
    s->head = head;
    s->first_row = n_cols - n_rows;
    s->n_rows = n_rows;
    s->n_cols = n_cols;
    s->weights.assign(size_t(n_rows * n_cols), 0.0f);
    for (int64_t r = 0; r < n_rows; ++r) {
        const int64_t q = s->first_row + r;
        double sum = 0;
        std::vector<double> w(size_t(q + 1));
        for (int64_t k = 0; k <= q; ++k) {
            w[size_t(k)] = std::exp(-double(q - k) * (0.3 + 0.2 * head)) + (k == 0 ? 0.5 : 0.0);
            sum += w[size_t(k)];
        }
        for (int64_t k = 0; k <= q; ++k)
            s->weights[size_t(r * n_cols + k)] = float(w[size_t(k)] / sum);
    }
    return s;
}

inline AttentionStats attention_stats(uint64_t run, int64_t step_index, int n_layer, int n_head) {
    AttentionStats st;
    st.run = run;
    st.step = step_index;
    st.n_layer = n_layer;
    st.n_head = n_head;
    st.n_keys = 20;
    for (int l = 0; l < n_layer; ++l)
        for (int h = 0; h < n_head; ++h)
            st.heads.push_back(
                {1.0f + 0.1f * float(h + l), 0.5f + 0.05f * float(h), 0.25f, 0.1f * float(h + 1)});
    return st;
}

inline std::shared_ptr<const KvSnapshot> kv_snapshot(uint64_t run, int64_t step_index,
                                                     std::vector<KvBlock> blocks) {
    auto s = std::make_shared<KvSnapshot>();
    s->run = run;
    s->step = step_index;
    s->block_tokens = 4;
    s->bytes_per_token = 18432;
    s->blocks = std::move(blocks);
    return s;
}

// 24 blocks: sequence 0 holds a sink, shared prefix, used, a heavy hitter, an evicted block and a
// partly filled one; sequence 1 two shared ones; the rest free.
inline std::shared_ptr<const KvSnapshot> mixed_kv(uint64_t run, int64_t step_index) {
    using S = KvBlockState;
    std::vector<KvBlock> b = {{0, S::Sink, 4},   {0, S::Shared, 4},  {0, S::Used, 4},
                              {0, S::Heavy, 4},  {0, S::Evicted, 4}, {0, S::Used, 2},
                              {1, S::Shared, 4}, {1, S::Shared, 4}};
    b.resize(24);
    return kv_snapshot(run, step_index, std::move(b));
}

inline MemoryCounters memory(uint64_t run, int64_t t_ns, int64_t kv_used, int64_t kv_budget) {
    MemoryCounters m;
    m.run = run;
    m.weights_bytes = 90ll << 20;
    m.kv_bytes = kv_budget;
    m.kv_used_bytes = kv_used;
    m.scratch_bytes = 8ll << 20;
    m.t_ns = t_ns;
    return m;
}

inline DraftToken draft(int32_t id, float q, float p, bool accepted) {
    return DraftToken{id, q, p, accepted};
}

inline SpecStep spec_step(uint64_t run, int64_t step_index, std::vector<DraftToken> drafted,
                          int accepted, int32_t resampled, int32_t bonus = -1) {
    SpecStep s;
    s.run = run;
    s.step = step_index;
    s.drafter = "ngram";
    s.drafted = std::move(drafted);
    s.accepted = accepted;
    s.resampled = resampled;
    s.bonus = bonus;
    s.draft_ns = 1'500'000;
    s.verify_ns = 6'000'000;
    return s;
}

inline PrefixCacheEvent prefix(uint64_t run, int64_t prompt, int64_t cached) {
    PrefixCacheEvent e;
    e.run = run;
    e.prompt_tokens = prompt;
    e.cached_tokens = cached;
    e.computed_tokens = prompt - cached;
    e.t_ns = 1'000'000;
    return e;
}

// A whole synthetic run: prompt, a prefill step, `n_tokens` decode steps with tokens, memory
// counters and KV snapshots, attention for layer 0 (heads 0..3) and stats, then RunFinished.
inline std::vector<Event> synthetic_run(uint64_t run, int n_tokens = 6) {
    std::vector<Event> ev;
    const auto prompt = chat_prompt();
    const int64_t n_prompt = int64_t(prompt.size());
    ev.emplace_back(run_started(run, prompt));
    ev.emplace_back(prefix(run, n_prompt, 10));
    ev.emplace_back(step(run, 0, StepPhase::Prefill, n_prompt - 10, 1'000'000, 9'000'000));
    ev.emplace_back(memory(run, 9'000'000, (n_prompt)*18432, 4096ll * 18432));
    // The prefill's attention, all of its rows (layer 0, heads 0..3).
    for (int h = 0; h < 4; ++h) ev.emplace_back(attention(run, 0, 0, h, n_prompt, n_prompt));
    const char* words[] = {"The",      " sky", " looks",    " blue",
                           " because", " of",  " Rayleigh", " scattering"};
    for (int i = 0; i < n_tokens; ++i) {
        const int64_t t0 = 10'000'000 + int64_t(i) * 15'000'000;
        ev.emplace_back(step(run, i + 1, StepPhase::Decode, 1, t0, t0 + 12'000'000));
        ev.emplace_back(token(run, i, 200 + i, words[i % 8], 0.6 - 0.05 * i,
                              {{200 + i, 0.6 - 0.05 * i}, {300 + i, 0.2}, {301 + i, 0.1}}));
        ev.emplace_back(memory(run, t0 + 12'000'000, (n_prompt + i + 1) * 18432, 4096ll * 18432));
        // Decode step i + 1 fed token i - 1 back (token 0 came from the prefill): one query row.
        if (i > 0)
            for (int h = 0; h < 4; ++h)
                ev.emplace_back(attention(run, i + 1, 0, h, 1, n_prompt + i));
    }
    ev.emplace_back(attention_stats(run, n_tokens, 2, 4));
    ev.emplace_back(mixed_kv(run, n_tokens));
    RunFinished f;
    f.run = run;
    f.stop = "max_tokens";
    f.n_tokens = n_tokens;
    f.t_ns = 10'000'000 + int64_t(n_tokens) * 15'000'000 + 2'000'000;
    ev.emplace_back(f);
    return ev;
}

// A mixture-of-experts routing for every StepEvent of `events`: n_layer layers, n_expert experts,
// n_used per token. Token t of step s in layer l goes to experts (s + t + l * j + j) % n_expert
// for j = 0..n_used-1 (two distinct experts when n_used = 2 and n_layer < n_expert), weights
// 0.6, 0.4 (then 0), so every count is known by hand.
inline std::vector<Event> with_experts(std::vector<Event> events, int32_t n_layer = 4,
                                       int32_t n_expert = 8, int32_t n_used = 2) {
    for (Event& e : events) {
        auto* s = std::get_if<StepEvent>(&e);
        if (!s) continue;
        auto r = std::make_shared<ExpertRouting>();
        r->n_layer = n_layer;
        r->n_expert = n_expert;
        r->n_used = n_used;
        r->n_tokens = s->tokens;
        for (int32_t l = 0; l < n_layer; ++l)
            for (int64_t t = 0; t < s->tokens; ++t)
                for (int32_t j = 0; j < n_used; ++j) {
                    r->experts.push_back(int32_t((s->index + t + l * j + j) % n_expert));
                    r->weights.push_back(j == 0 ? 0.6f : j == 1 ? 0.4f : 0.0f);
                }
        s->experts = std::move(r);
    }
    return events;
}

// Saves `panel` as PNG and SVG under $FLUORO_PANEL_SHOTS when that is set (for looking at the
// panels).
template <class Panel>
inline void save_shot(Panel& panel, const QString& name) {
    const QByteArray dir = qgetenv("FLUORO_PANEL_SHOTS");
    if (dir.isEmpty()) return;
    QDir().mkpath(QString::fromLocal8Bit(dir));
    const QString base = QString::fromLocal8Bit(dir) + QLatin1Char('/') + name;
    panel.export_image(base + QStringLiteral(".png"));
    // Label the picture: these are not a real run's numbers.
    QImage img(base + QStringLiteral(".png"));
    if (!img.isNull()) {
        QPainter p(&img);
        const QString tag = QStringLiteral(" synthetic events ");
        const QRect box = p.fontMetrics().boundingRect(tag).adjusted(-2, -1, 2, 1);
        const QRect at(img.width() - box.width() - 4, img.height() - box.height() - 4, box.width(),
                       box.height());
        p.fillRect(at, QColor(200, 40, 40, 220));
        p.setPen(Qt::white);
        p.drawText(at, Qt::AlignCenter, tag);
        p.end();
        img.save(base + QStringLiteral(".png"));
    }
    panel.export_image(base + QStringLiteral(".svg"));
}

}  // namespace fluoro::test
