#include "panels/token_model.h"

#include <cmath>

namespace fluoro::ui {

bool TokenState::consume(const Event& event) {
    if (const auto* r = std::get_if<RunStarted>(&event)) {
        run_ = r->run;
        remote_ = r->backend == "remote";
        tokens_.clear();
        ++generation_;
        vocab_.add_prompt(*r);
        return true;
    }
    if (const auto* t = std::get_if<TokenEvent>(&event)) {
        if (run_ == 0) run_ = t->run;
        tokens_.push_back(*t);
        vocab_.add(t->id, t->piece);
        return true;
    }
    return false;
}

int TokenState::row_of(int64_t index) const {
    // Tokens arrive in order, so usually tokens_[index] is it.
    if (index >= 0 && size_t(index) < tokens_.size() && tokens_[size_t(index)].index == index)
        return int(index);
    for (size_t i = 0; i < tokens_.size(); ++i)
        if (tokens_[i].index == index) return int(i);
    return -1;
}

void TokenListModel::set_state(const TokenState* state) {
    show_rows(state, state ? state->generation() : 0, state ? int(state->tokens().size()) : 0);
}

int TokenListModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant TokenListModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !state()) return {};
    const TokenEvent& t = state()->tokens()[size_t(index.row())];
    const bool has_prob = t.id >= 0;
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Index:
                return qlonglong(t.index);
            case Token:
                return piece_label(t.piece, 32);
            case Probability:
                return has_prob ? QString::number(std::exp(double(t.logprob)), 'f', 4)
                                : QStringLiteral("—");
            case LogProb:
                return has_prob ? QString::number(double(t.logprob), 'f', 3) : QStringLiteral("—");
            case Time:
                return format_ms(double(t.t_ns) * 1e-6);
        }
    } else if (role == Qt::UserRole) {
        switch (index.column()) {
            case Index:
                return qlonglong(t.index);
            case Probability:
                return has_prob ? QVariant(std::exp(double(t.logprob))) : QVariant();
            case LogProb:
                return has_prob ? QVariant(double(t.logprob)) : QVariant();
            default:
                return {};
        }
    } else if (role == Qt::ToolTipRole && !has_prob) {
        return QStringLiteral(
            "No probabilities: text flushed at the end of the run (no token released it), or "
            "a remote server's text sent without logprobs");
    }
    return {};
}

QVariant TokenListModel::headerData(int section, Qt::Orientation orientation, int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Index:
            return QStringLiteral("#");
        case Token:
            return QStringLiteral("Token");
        case Probability:
            return QStringLiteral("p");
        case LogProb:
            return QStringLiteral("log p");
        case Time:
            return QStringLiteral("Time");
    }
    return {};
}

void TokenAlternativesModel::set_token(const TokenEvent* token, const TokenVocab* vocab) {
    beginResetModel();
    top_.clear();
    labels_.clear();
    chosen_ = token ? token->id : -1;
    if (token) {
        top_ = token->top;
        // The texts the token came with (a remote server's alternatives, whose ids name no
        // vocabulary), else the vocabulary's.
        const bool texts = token->top_text.size() == top_.size();
        for (size_t i = 0; i < top_.size(); ++i)
            labels_.push_back(texts   ? piece_label(token->top_text[i], 32)
                              : vocab ? vocab->label(top_[i].id, 32)
                                      : QStringLiteral("#%1").arg(top_[i].id));
    }
    endResetModel();
}

int TokenAlternativesModel::rowCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : int(top_.size());
}

int TokenAlternativesModel::columnCount(const QModelIndex& parent) const {
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant TokenAlternativesModel::data(const QModelIndex& index, int role) const {
    if (!checkIndex(index, CheckIndexOption::IndexIsValid)) return {};
    const TokenProb& tp = top_[size_t(index.row())];
    if (role == Qt::DisplayRole) {
        switch (index.column()) {
            case Rank:
                return index.row() + 1;
            case Token:
                return labels_[size_t(index.row())];
            case Probability:
                return QString::number(std::exp(double(tp.logprob)), 'f', 4);
            case Chosen:
                return tp.id == chosen_ ? QStringLiteral("chosen") : QString();
        }
    } else if (role == Qt::UserRole) {
        switch (index.column()) {
            case Token:
                return tp.id;
            case Probability:
                return std::exp(double(tp.logprob));
            case Chosen:
                return tp.id == chosen_;
            default:
                return index.row() + 1;
        }
    }
    return {};
}

QVariant TokenAlternativesModel::headerData(int section, Qt::Orientation orientation,
                                            int role) const {
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
    switch (section) {
        case Rank:
            return QStringLiteral("Rank");
        case Token:
            return QStringLiteral("Token");
        case Probability:
            return QStringLiteral("p");
        case Chosen:
            return QString();
    }
    return {};
}

}  // namespace fluoro::ui
