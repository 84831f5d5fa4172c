#include "panels/prompt_cache_model.h"

#include "panels/panel_util.h"

namespace fluoro::ui {

double PromptRequest::hit_rate() const {
    if (!cache || cache->prompt_tokens <= 0) return 0.0;
    return double(cache->cached_tokens) / double(cache->prompt_tokens);
}

std::optional<int64_t> PromptRequest::first_diverging() const {
    if (!cache || cache->cached_tokens >= cache->prompt_tokens) return std::nullopt;
    return cache->cached_tokens;
}

bool PromptCacheState::consume(const Event& event) {
    if (const auto* r = std::get_if<RunStarted>(&event)) {
        PromptRequest req;
        req.run = r->run;
        req.prompt_tokens =
            r->prompt_tokens > 0 ? r->prompt_tokens : int64_t(r->prompt_pieces.size());
        req.pieces = r->prompt_pieces;
        requests_.push_back(std::move(req));
        return true;
    }
    if (const auto* c = std::get_if<PrefixCacheEvent>(&event)) {
        // The report belongs to the latest request of its run.
        for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
            if (it->run != c->run) continue;
            it->cache = *c;
            it->t_s = double(c->t_ns) * 1e-9;
            return true;
        }
        return false;
    }
    return false;
}

const PromptRequest* PromptCacheState::last_report() const {
    for (auto it = requests_.rbegin(); it != requests_.rend(); ++it)
        if (it->cache) return &*it;
    return nullptr;
}

bool PromptCacheState::any_report() const {
    for (const PromptRequest& r : requests_)
        if (r.cache) return true;
    return false;
}

double PromptCacheState::overall_hit_rate() const {
    int64_t cached = 0, prompt = 0;
    for (const PromptRequest& r : requests_) {
        if (!r.cache) continue;
        cached += r.cache->cached_tokens;
        prompt += r.cache->prompt_tokens;
    }
    return prompt > 0 ? double(cached) / double(prompt) : 0.0;
}

void PromptCacheModel::set_state(const PromptCacheState* state) {
    // Requests are few and a report can change an existing row: reset.
    beginResetModel();
    state_ = state;
    rows_ = state ? int(state->requests().size()) : 0;
    endResetModel();
}

int PromptCacheModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : rows_;
}

int PromptCacheModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PromptCacheModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !state_) return {};
    const PromptRequest& r = state_->requests()[size_t(index.row())];
    if (role == Qt::DisplayRole) {
        const bool rep = r.cache.has_value();
        switch (index.column()) {
            case Run:
                return qulonglong(r.run);
            case Prompt:
                return qlonglong(r.prompt_tokens);
            case Reused:
                return rep ? QVariant(qlonglong(r.cache->cached_tokens))
                           : QVariant(QStringLiteral("—"));
            case Recomputed:
                return rep ? QVariant(qlonglong(r.cache->computed_tokens))
                           : QVariant(QStringLiteral("—"));
            case HitRate:
                return rep ? format_percent(r.hit_rate()) : QStringLiteral("no report");
            case Diverging: {
                if (!rep) return QStringLiteral("—");
                const auto d = r.first_diverging();
                if (!d) return QStringLiteral("whole prompt reused");
                const QString piece = size_t(*d) < r.pieces.size()
                                          ? piece_label(r.pieces[size_t(*d)], 16)
                                          : QString();
                if (r.cache->diverge_at == *d)  // the cache held another token here
                    return QStringLiteral("#%1 “%2” ≠ cached “%3”")
                        .arg(*d)
                        .arg(piece)
                        .arg(piece_label(r.cache->diverge_cached_piece, 16));
                return QStringLiteral("#%1 “%2” (new)").arg(*d).arg(piece);
            }
            case Evicted:
                return rep ? QVariant(qlonglong(r.cache->evicted_tokens))
                           : QVariant(QStringLiteral("—"));
        }
    } else if (role == Qt::UserRole) {
        switch (index.column()) {
            case HitRate:
                return r.hit_rate();
            case Diverging: {
                const auto d = r.first_diverging();
                return d ? QVariant(qlonglong(*d)) : QVariant();
            }
            default:
                return {};
        }
    }
    return {};
}

QVariant PromptCacheModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Run:
            return QStringLiteral("Run");
        case Prompt:
            return QStringLiteral("Prompt");
        case Reused:
            return QStringLiteral("Reused");
        case Recomputed:
            return QStringLiteral("Recomputed");
        case HitRate:
            return QStringLiteral("Hit rate");
        case Diverging:
            return QStringLiteral("First diverging token");
        case Evicted:
            return QStringLiteral("Evicted");
    }
    return {};
}

}  // namespace fluoro::ui
