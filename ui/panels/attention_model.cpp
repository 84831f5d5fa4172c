#include "panels/attention_model.h"

#include <QBrush>
#include <QFont>
#include <algorithm>
#include <cmath>
#include <iterator>

#include "panels/panel_util.h"

namespace fluoro::ui {

bool AttentionState::consume(const Event& event) {
    if (const auto* r = std::get_if<RunStarted>(&event)) {
        run_ = r->run;
        slots_.begin_run(r->conversation);
        heads_.clear();
        stats_.reset();
        generated_.clear();
        block_states_.clear();
        prompt_pieces_ = r->prompt_pieces;
        return true;
    }
    if (const auto* t = std::get_if<TokenEvent>(&event)) {
        if (t->index < 0) return false;
        if (size_t(t->index) >= generated_.size()) generated_.resize(size_t(t->index) + 1);
        generated_[size_t(t->index)] = t->piece;
        return false;  // labels only; shown with the next snapshot
    }
    if (const auto* a = std::get_if<std::shared_ptr<const AttentionSnapshot>>(&event)) {
        const auto& s = *a;
        if (!s || s->layer < 0 || s->head < 0) return false;
        if (!s->shape_ok()) return false;  // malformed
        note_shape(s->layer + 1, s->head + 1);
        HeadRows& h = heads_[{s->layer, s->head}];
        for (int64_t r = 0; r < s->n_rows; ++r) {
            const auto first = s->weights.begin() + ptrdiff_t(r * s->n_cols);
            h.rows.push_back({s->step, s->first_row + r, s->key_begin,
                              std::vector<float>(first, first + s->n_cols)});
        }
        while (h.rows.size() > kMaxRows) h.rows.pop_front();
        h.step = s->step;
        h.t_ns = s->t_ns;
        h.run = s->run;
        h.composite.reset();
        return true;
    }
    if (const auto* st = std::get_if<AttentionStats>(&event)) {
        if (st->heads.size() != size_t(st->n_layer) * size_t(st->n_head)) return false;
        note_shape(st->n_layer, st->n_head);
        stats_ = *st;
        return true;
    }
    if (const auto* kv = std::get_if<std::shared_ptr<const KvSnapshot>>(&event)) {
        const auto& s = *kv;
        if (!s || s->block_tokens <= 0) return false;
        // The sequence the run writes: the owner with the most blocks (one sequence today).
        std::map<int32_t, int> counts;
        for (const KvBlock& b : s->blocks)
            if (b.owner >= 0) ++counts[b.owner];
        block_states_.clear();
        block_tokens_ = s->block_tokens;
        if (counts.empty()) return true;
        const int32_t owner = std::max_element(counts.begin(), counts.end(), [](auto& x, auto& y) {
                                  return x.second < y.second;
                              })->first;
        for (const KvBlock& b : s->blocks)
            if (b.owner == owner) block_states_.push_back(b.state);
        return true;
    }
    if (const auto* ev = std::get_if<KvEviction>(&event)) {
        if (ev->run != run_) return false;
        slots_.add(*ev);
        drop_composites();  // the slots of this step's rows hold other positions now
        return true;
    }
    if (const auto* pc = std::get_if<PrefixCacheEvent>(&event)) {
        if (pc->run != run_) return false;
        // The engine keeps the last prompt token to compute: at most prompt_tokens - 1 reused.
        slots_.set_reuse(std::min(pc->cached_tokens, std::max<int64_t>(pc->prompt_tokens - 1, 0)));
        drop_composites();
        return slots_.any();
    }
    if (const auto* d = std::get_if<DropReport>(&event)) {
        dropped_ = d->total_attention;
        return d->attention > 0;
    }
    if (std::holds_alternative<ModelLoaded>(event) ||
        std::holds_alternative<ModelUnloaded>(event)) {
        reset();
        return true;
    }
    return false;
}

void AttentionState::reset() {
    *this = AttentionState();
}

void AttentionState::drop_composites() {
    for (auto& kv : heads_) kv.second.composite.reset();
}

void AttentionState::note_shape(int layers, int heads) {
    n_layers_ = std::max(n_layers_, layers);
    n_heads_ = std::max(n_heads_, heads);
}

std::shared_ptr<const AttentionSnapshot> AttentionState::snapshot(int layer, int head) const {
    const auto it = heads_.find({layer, head});
    if (it == heads_.end() || it->second.rows.empty()) return nullptr;
    if (!it->second.composite) it->second.composite = compose(layer, head, it->second, slots_);
    return it->second.composite;
}

std::shared_ptr<const AttentionSnapshot> AttentionState::compose(int layer, int head,
                                                                 const HeadRows& h,
                                                                 const KvSlotHistory& history) {
    // Each row through the slot layout of its step: query and key slots become positions. A later
    // row of the same query position replaces an earlier one.
    std::map<int64_t, KvSlotLayout> layouts;  // by step
    struct Placed {
        const HeadRows::Row* row;
        const KvSlotLayout* layout;
    };
    std::map<int64_t, Placed> by_pos;
    for (const HeadRows::Row& row : h.rows) {
        auto at = layouts.find(row.step);
        if (at == layouts.end()) at = layouts.emplace(row.step, history.at_step(row.step)).first;
        by_pos[at->second.position(row.query_slot)] = {&row, &at->second};
    }
    // The contiguous rows ending at the latest query position (a gap means an older capture).
    auto first = std::prev(by_pos.end());
    while (first != by_pos.begin() && std::prev(first)->first == first->first - 1) --first;
    int64_t key_begin = -1, key_end = 0;
    for (auto it = first; it != by_pos.end(); ++it) {
        const HeadRows::Row& row = *it->second.row;
        if (row.weights.empty()) continue;
        const int64_t lo = it->second.layout->position(row.key_begin);
        const int64_t hi =
            it->second.layout->position(row.key_begin + int64_t(row.weights.size()) - 1);
        key_begin = key_begin < 0 ? lo : std::min(key_begin, lo);
        key_end = std::max(key_end, hi + 1);
    }
    key_begin = std::max<int64_t>(key_begin, 0);
    auto s = std::make_shared<AttentionSnapshot>();
    s->run = h.run;
    s->step = h.step;
    s->layer = layer;
    s->head = head;
    s->first_row = first->first;
    s->n_rows = int64_t(std::distance(first, by_pos.end()));
    s->key_begin = key_begin;
    s->n_cols = std::max<int64_t>(key_end - key_begin, 0);
    s->t_ns = h.t_ns;
    s->weights.assign(size_t(s->n_rows * s->n_cols), 0.0f);  // keys a row did not see: 0
    int64_t r = 0;
    for (auto it = first; it != by_pos.end(); ++it, ++r) {
        const HeadRows::Row& row = *it->second.row;
        for (size_t k = 0; k < row.weights.size(); ++k) {
            const int64_t c = it->second.layout->position(row.key_begin + int64_t(k)) - key_begin;
            if (c >= 0 && c < s->n_cols) s->weights[size_t(r * s->n_cols + c)] = row.weights[k];
        }
    }
    return s;
}

const AttentionHeadStats* AttentionState::head_stats(int layer, int head) const {
    if (!stats_ || layer < 0 || head < 0 || layer >= stats_->n_layer || head >= stats_->n_head)
        return nullptr;
    return &stats_->heads[size_t(layer) * size_t(stats_->n_head) + size_t(head)];
}

QString AttentionState::key_label(int64_t pos, int max_chars) const {
    if (pos < 0) return QStringLiteral("#%1").arg(pos);
    if (size_t(pos) < prompt_pieces_.size())
        return piece_label(prompt_pieces_[size_t(pos)], max_chars);
    const size_t g = size_t(pos) - prompt_pieces_.size();
    if (g < generated_.size()) return piece_label(generated_[g], max_chars);
    return QStringLiteral("#%1").arg(pos);
}

std::optional<KvBlockState> AttentionState::key_mark(int64_t pos) const {
    if (slots_.any()) {
        switch (slots_.latest().reason(pos).value_or(KvKeepReason::Recent)) {
            case KvKeepReason::Sink:
                return KvBlockState::Sink;
            case KvKeepReason::Heavy:
                return KvBlockState::Heavy;
            case KvKeepReason::Evicted:
                return KvBlockState::Evicted;
            case KvKeepReason::Recent:
                return std::nullopt;
        }
    }
    if (block_tokens_ <= 0 || pos < 0) return std::nullopt;
    const size_t b = size_t(pos / block_tokens_);
    if (b >= block_states_.size()) return std::nullopt;
    const KvBlockState s = block_states_[b];
    if (s == KvBlockState::Evicted || s == KvBlockState::Sink || s == KvBlockState::Heavy) return s;
    return std::nullopt;
}

void AttentionStatsModel::set_stats(const AttentionStats* stats, int layer) {
    beginResetModel();
    rows_.clear();
    layer_ = layer;
    if (stats && layer >= 0 && layer < stats->n_layer) {
        const auto first = stats->heads.begin() + ptrdiff_t(layer) * stats->n_head;
        rows_.assign(first, first + stats->n_head);
        top_k_ = stats->top_k;
        threshold_ = stats->threshold;
        n_keys_ = stats->n_keys;
        step_ = stats->step;
    }
    endResetModel();
}

int AttentionStatsModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

int AttentionStatsModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AttentionStatsModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
    const AttentionHeadStats& h = rows_[size_t(index.row())];
    const int col = index.column();
    if (role == Qt::DisplayRole) {
        switch (col) {
            case Head:
                return index.row();
            case Entropy:
                return QString::number(h.entropy, 'f', 3);
            case TopKMass:
                return format_percent(h.top_k_mass);
            case BelowThreshold:
                return format_percent(h.below_threshold);
            case SinkMass:
                return format_percent(h.sink_mass);
        }
    } else if (role == Qt::UserRole) {  // raw numbers, for sorting and tests
        switch (col) {
            case Head:
                return index.row();
            case Entropy:
                return double(h.entropy);
            case TopKMass:
                return double(h.top_k_mass);
            case BelowThreshold:
                return double(h.below_threshold);
            case SinkMass:
                return double(h.sink_mass);
        }
    } else if (role == Qt::TextAlignmentRole) {
        return QVariant::fromValue(Qt::Alignment(Qt::AlignRight | Qt::AlignVCenter));
    } else if (role == Qt::ToolTipRole && col == Entropy && n_keys_ > 1) {
        return QStringLiteral("%1 nats; uniform over %2 keys would be %3 nats")
            .arg(h.entropy, 0, 'f', 3)
            .arg(n_keys_)
            .arg(std::log(double(n_keys_)), 0, 'f', 3);
    }
    return {};
}

QVariant AttentionStatsModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount) return {};
    if (role == Qt::DisplayRole) {
        switch (section) {
            case Head:
                return QStringLiteral("Head");
            case Entropy:
                return QStringLiteral("Entropy");
            case TopKMass:
                return QStringLiteral("Top-%1 mass").arg(top_k_);
            case BelowThreshold:
                return QStringLiteral("< %1").arg(double(threshold_), 0, 'g', 2);
            case SinkMass:
                return QStringLiteral("Sink mass");
        }
    } else if (role == Qt::ToolTipRole) {
        switch (section) {
            case Head:
                return QStringLiteral("Query head of layer %1 (step %2)").arg(layer_).arg(step_);
            case Entropy:
                return QStringLiteral("Entropy of the last query row's attention, in nats");
            case TopKMass:
                return QStringLiteral("Attention mass on the %1 keys with the most weight")
                    .arg(top_k_);
            case BelowThreshold:
                return QStringLiteral("Fraction of keys with weight below %1")
                    .arg(double(threshold_));
            case SinkMass:
                return QStringLiteral("Attention mass on the first 4 keys (attention sinks)");
        }
    }
    return {};
}

}  // namespace fluoro::ui
