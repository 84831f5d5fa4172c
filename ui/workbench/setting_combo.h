// Combo boxes over the engine's setting lists (settings/settings.h): one item per list item in the
// engine's order, showing its label, its description as the tooltip and its enum value as the item
// data. A new KV policy, KV type, backend or drafter in the engine shows here without a GUI edit,
// and the panel reads the enum back from the item data, never from a position or a label.
#pragma once

#include <QComboBox>
#include <QString>
#include <QVariant>
#include <optional>
#include <span>
#include <string_view>

#include "runtime/engine_commands.h"

namespace fluoro::ui {

inline QString setting_text(std::string_view s) {
    return QString::fromUtf8(s.data(), qsizetype(s.size()));
}

template <typename Info>
void fill_setting_combo(QComboBox* box, std::span<const Info> list) {
    for (const Info& i : list) {
        box->addItem(setting_text(i.label), int(i.kind));
        box->setItemData(box->count() - 1, setting_text(i.description), Qt::ToolTipRole);
    }
}

// The chosen item's enum value (`fallback` when nothing is chosen).
template <typename Kind>
Kind combo_setting(const QComboBox* box, Kind fallback) {
    const QVariant v = box->currentData();
    return v.isValid() ? Kind(v.toInt()) : fallback;
}

template <typename Kind>
void select_setting(QComboBox* box, Kind k) {
    if (const int i = box->findData(int(k)); i >= 0) box->setCurrentIndex(i);
}

// What a QSettings value names: an item's name (how the panel stores a choice), or, as older
// versions stored some choices, its position in the list.
template <typename Info>
auto stored_setting(std::span<const Info> list, const QVariant& v)
    -> std::optional<decltype(Info::kind)> {
    if (!v.isValid()) return std::nullopt;
    const QString text = v.toString();
    for (const Info& i : list)
        if (text == setting_text(i.name)) return i.kind;
    bool is_int = false;
    const int index = text.toInt(&is_int);
    if (is_int && index >= 0 && size_t(index) < list.size()) return list[size_t(index)].kind;
    return std::nullopt;
}

// The name to store for the chosen item.
template <typename Kind, typename Name>
QString setting_name(const QComboBox* box, Kind fallback, Name name_of) {
    return setting_text(name_of(combo_setting(box, fallback)));
}

}  // namespace fluoro::ui
