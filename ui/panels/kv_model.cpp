#include "panels/kv_model.h"

#include <QStringList>
#include <algorithm>
#include <map>

#include "panels/panel_util.h"

namespace fluoro::ui {

KvEvictionCounts eviction_counts(const KvEviction& e) {
    KvEvictionCounts n;
    for (uint8_t why : e.reasons) {
        if (why == uint8_t(KvKeepReason::Sink))
            ++n.sinks;
        else if (why == uint8_t(KvKeepReason::Heavy))
            ++n.heavy;
        else
            ++n.recent;
    }
    n.evicted = int64_t(e.evicted.size());
    return n;
}

int64_t KvState::positions() const {
    int64_t n = std::max(prompt_tokens_ + generated_, slots_.latest().next());
    for (const KvEviction& e : slots_.evictions()) n = std::max(n, e.length_before);
    return n;
}

int64_t KvState::bytes_saved() const {
    return snapshot_ ? evicted_positions() * snapshot_->bytes_per_token : 0;
}

bool KvState::consume(const Event& event) {
    if (const auto* r = std::get_if<RunStarted>(&event)) {
        memory_.clear();  // memory over time is per run; the pool stays until the
                          // next snapshot
        slots_.begin_run(r->conversation);
        prompt_tokens_ = r->prompt_tokens;
        generated_ = 0;
        return true;
    }
    if (const auto* t = std::get_if<TokenEvent>(&event)) {
        if (t->id >= 0) generated_ = std::max(generated_, t->index + 1);
        return false;  // shown with the next snapshot or eviction
    }
    if (const auto* ev = std::get_if<KvEviction>(&event)) {
        slots_.add(*ev);
        return true;
    }
    if (const auto* pc = std::get_if<PrefixCacheEvent>(&event)) {
        // The engine keeps the last prompt token to compute: at most prompt_tokens - 1 reused.
        slots_.set_reuse(std::min(pc->cached_tokens, std::max<int64_t>(pc->prompt_tokens - 1, 0)));
        return slots_.any();
    }
    if (const auto* kv = std::get_if<std::shared_ptr<const KvSnapshot>>(&event)) {
        if (!*kv) return false;
        snapshot_ = *kv;
        ++snapshots_seen_;
        return true;
    }
    if (const auto* m = std::get_if<MemoryCounters>(&event)) {
        memory_.push_back({double(m->t_ns) * 1e-9, *m});
        return true;
    }
    if (const auto* d = std::get_if<DropReport>(&event)) {
        dropped_ = d->total_kv;
        return d->kv > 0;
    }
    if (std::holds_alternative<ModelUnloaded>(event) ||
        std::holds_alternative<ModelLoaded>(event)) {
        *this = KvState();
        if (const auto* m = std::get_if<ModelLoaded>(&event))
            model_kv_ = {m->kv_window, m->kv_bytes, m->kv_bytes_if_full, m->kv_window_note};
        return true;
    }
    return false;
}

QString KvState::window_storage() const {
    // The run's counters say how its cache stores the window layers; why they store every token
    // comes with the model's load (when this panel saw it).
    const auto keep = [](int64_t window, int64_t now, int64_t full) {
        return QStringLiteral(
                   "window layers keep their last %1 keys: %2 allocated, %3 storing "
                   "every token")
            .arg(window)
            .arg(format_bytes(now), format_bytes(full));
    };
    const ModelKv& m = model_kv_;
    if (const MemoryCounters* c = last_memory()) {
        if (c->kv_window > 0) return keep(c->kv_window, c->kv_bytes, c->kv_bytes_if_full);
        if (c->kv_bytes != m.kv_bytes_if_full) return QString();  // another model's run
        if (m.window > 0)
            return QStringLiteral(
                "window layers store every token: the KV policy compacts the "
                "cache");
        return QString::fromStdString(m.window_note);
    }
    if (m.window > 0) return keep(m.window, m.kv_bytes, m.kv_bytes_if_full);
    return QString::fromStdString(m.window_note);
}

std::array<int, kKvStates> KvState::state_counts() const {
    std::array<int, kKvStates> counts{};
    if (snapshot_)
        for (const KvBlock& b : snapshot_->blocks)
            if (size_t(b.state) < kKvStates) ++counts[size_t(b.state)];
    return counts;
}

QString block_ranges(const std::vector<int32_t>& blocks) {
    QStringList parts;
    for (size_t i = 0; i < blocks.size();) {
        size_t j = i;
        while (j + 1 < blocks.size() && blocks[j + 1] == blocks[j] + 1) ++j;
        parts << (j == i ? QString::number(blocks[i])
                         : QStringLiteral("%1–%2").arg(blocks[i]).arg(blocks[j]));
        i = j + 1;
    }
    return parts.join(QStringLiteral(", "));
}

void KvBlockTableModel::set_snapshot(const KvSnapshot* snapshot) {
    beginResetModel();
    rows_.clear();
    bytes_per_token_ = snapshot ? snapshot->bytes_per_token : 0;
    if (snapshot) {
        std::map<int32_t, Row> by_owner;
        for (size_t i = 0; i < snapshot->blocks.size(); ++i) {
            const KvBlock& b = snapshot->blocks[i];
            if (b.owner < 0) continue;  // free blocks belong to no sequence
            Row& r = by_owner[b.owner];
            r.owner = b.owner;
            r.blocks.push_back(int32_t(i));
            r.tokens += b.tokens;
            if (size_t(b.state) < kKvStates) ++r.states[size_t(b.state)];
        }
        for (auto& [owner, row] : by_owner) rows_.push_back(std::move(row));
    }
    endResetModel();
}

int KvBlockTableModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(rows_.size());
}

int KvBlockTableModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant KvBlockTableModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
    const Row& r = rows_[size_t(index.row())];
    if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
        switch (index.column()) {
            case Sequence:
                return QStringLiteral("seq %1").arg(r.owner);
            case Blocks:
                return qlonglong(r.blocks.size());
            case Tokens:
                return qlonglong(r.tokens);
            case Bytes:
                return format_bytes(r.tokens * bytes_per_token_);
            case States: {
                QStringList parts;
                for (size_t s = 0; s < kKvStates; ++s)
                    if (r.states[s] > 0)
                        parts << QStringLiteral("%1 %2")
                                     .arg(kv_state_label(KvBlockState(s)))
                                     .arg(r.states[s]);
                return parts.join(QStringLiteral(" · "));
            }
            case BlockIds:
                return block_ranges(r.blocks);
        }
    } else if (role == Qt::UserRole) {
        switch (index.column()) {
            case Sequence:
                return r.owner;
            case Blocks:
                return qlonglong(r.blocks.size());
            case Tokens:
                return qlonglong(r.tokens);
            case Bytes:
                return qlonglong(r.tokens * bytes_per_token_);
            default:
                return {};
        }
    }
    return {};
}

QVariant KvBlockTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Sequence:
            return QStringLiteral("Sequence");
        case Blocks:
            return QStringLiteral("Blocks");
        case Tokens:
            return QStringLiteral("Tokens");
        case Bytes:
            return QStringLiteral("Bytes");
        case States:
            return QStringLiteral("States");
        case BlockIds:
            return QStringLiteral("Block table (pool indices)");
    }
    return {};
}

}  // namespace fluoro::ui
