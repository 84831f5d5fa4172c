// The setting lists (settings/settings.h): each covers its enum exactly once in the enum's order,
// names round-trip through the parsers, and the traits that are data agree with the code that
// acts on them (KV type bytes with ggml's block layouts, the draft-model trait with
// SpeculativeSettings::validate). The KV policy traits against kv_decide are in
// tests/engine/kv/kv_policy_traits_test.cpp.
#include "settings/settings.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/error.h"
#include "kv/kv_cache.h"
#include "speculative/spec_settings.h"
#include "tensor/ggml_type.h"

namespace fluoro {
namespace {

// Every list: items in enum order 0..n-1, names unique and parseable, text for menus and help.
template <typename Info, typename Parse>
void expect_well_formed(std::span<const Info> list, size_t enum_size, Parse parse) {
    ASSERT_EQ(list.size(), enum_size);
    std::set<std::string_view> names;
    for (size_t i = 0; i < list.size(); ++i) {
        const Info& item = list[i];
        EXPECT_EQ(size_t(item.kind), i) << item.name << ": not in the enum's order";
        EXPECT_FALSE(item.name.empty());
        EXPECT_FALSE(item.label.empty()) << item.name;
        EXPECT_FALSE(item.description.empty()) << item.name;
        EXPECT_TRUE(names.insert(item.name).second) << item.name << " listed twice";
        const auto parsed = parse(item.name);
        ASSERT_TRUE(parsed) << item.name;
        EXPECT_EQ(*parsed, item.kind) << item.name;
    }
    EXPECT_FALSE(parse("no-such-setting"));
    EXPECT_FALSE(parse(""));
}

TEST(Settings, EveryListCoversItsEnumOnceInOrder) {
    expect_well_formed(kv_policies(), 6, parse_kv_policy);
    expect_well_formed(kv_types(), 4, parse_kv_type);
    expect_well_formed(attention_impls(), 2, parse_attention_impl);
    expect_well_formed(backend_kinds(), 2, parse_backend_kind);
    expect_well_formed(telemetry_levels(), 4, parse_telemetry_level);
    expect_well_formed(spec_modes(), 4, parse_spec_mode);
}

TEST(Settings, NamesAreTheOnesTheCliAndStoredRunsUse) {
    // Stored runs and the prefix cache file key hold these names: they must never change.
    EXPECT_EQ(setting_names(kv_policies()), "full, window, streaming, h2o, scissorhands or snapkv");
    EXPECT_EQ(setting_names(kv_types(), ", ", ", "), "f32, f16, q8_0, q4_0");
    EXPECT_EQ(setting_names(attention_impls()), "standard or flash");
    EXPECT_EQ(setting_names(backend_kinds()), "cpu or cuda");
    EXPECT_EQ(setting_names(telemetry_levels(), ",", ","), "off,summary,full,trace");
    EXPECT_EQ(setting_names(spec_modes()), "off, prompt_lookup, draft_model or self_speculative");
    EXPECT_EQ(kv_policy_name(KvPolicyKind::SnapKV), "snapkv");
    EXPECT_EQ(kv_type_name(KvType::Q8_0), "q8_0");
    EXPECT_EQ(attention_impl_name(kDefaultAttentionImpl), "flash");
    EXPECT_EQ(backend_kind_name(BackendKind::Cuda), "cuda");
    EXPECT_EQ(telemetry_level_name(TelemetryLevel::Summary), "summary");
    EXPECT_EQ(spec_mode_name(SpecMode::SelfSpeculative), "self_speculative");
}

TEST(Settings, SpecModeAliasesParse) {
    EXPECT_EQ(parse_spec_mode("none"), SpecMode::Off);
    EXPECT_EQ(parse_spec_mode("ngram"), SpecMode::PromptLookup);
    EXPECT_EQ(parse_spec_mode("self"), SpecMode::SelfSpeculative);
    for (const SpecModeInfo& m : spec_modes())
        if (!m.alias.empty()) {
            EXPECT_EQ(parse_spec_mode(m.alias), m.kind) << m.alias;
        }
}

TEST(Settings, HelpSaysWhatEachItemDoes) {
    const std::string help = setting_help(attention_impls());
    for (const AttentionImplInfo& a : attention_impls()) {
        EXPECT_NE(help.find(std::string(a.name) + " (" + std::string(a.description) + ")"),
                  std::string::npos)
            << help;
    }
}

// The KV type's bytes are ggml's block layouts, which the CPU and CUDA kernels (and the GGUF
// files) use: compare with the tensor module's independent table.
// Keys and values of one type are named by that type; of two, "keys/values"; the parser reads
// back exactly what the namer writes and nothing else.
TEST(Settings, KvTypesNamesRoundTrip) {
    EXPECT_EQ(kv_types_name(KvType::Q8_0), "q8_0");
    EXPECT_EQ(kv_types_name(KvTypes{KvType::Q8_0, KvType::F16}), "q8_0/f16");
    EXPECT_EQ(kv_types_name(KvTypes{}), "f16");
    for (const KvTypeInfo& k : kv_types())
        for (const KvTypeInfo& v : kv_types()) {
            const KvTypes t{k.kind, v.kind};
            EXPECT_EQ(parse_kv_types(kv_types_name(t)), t) << kv_types_name(t);
        }
    for (const char* bad : {"", "/", "q8_0/", "/f16", "q8_0/f16/f16", "q5_1", "f16/q5_1", "F16"})
        EXPECT_FALSE(parse_kv_types(bad)) << bad;
    // KV rows take each half's bytes.
    KvShape s;
    s.n_layer = 1;
    s.n_head_kv = {3};
    s.head_dim_k = s.head_dim_v = 64;
    s.type = KvTypes{KvType::Q8_0, KvType::F16};
    EXPECT_EQ(s.k_row_bytes(0), 3u * 2 * 34);
    EXPECT_EQ(s.v_row_bytes(0), 3u * 64 * 2);
}

TEST(Settings, KvTypeBytesAreGgmlsBlockLayouts) {
    const std::pair<KvType, GgmlType> same[] = {{KvType::F32, GgmlType::F32},
                                                {KvType::F16, GgmlType::F16},
                                                {KvType::Q8_0, GgmlType::Q8_0},
                                                {KvType::Q4_0, GgmlType::Q4_0}};
    ASSERT_EQ(std::size(same), kv_types().size());
    for (const auto& [kv, ggml] : same) {
        const KvTypeInfo& info = kv_type_info(kv);
        const TypeTraits& t = type_traits(ggml);
        EXPECT_EQ(info.block_elems, int64_t(t.block_elems)) << info.name;
        EXPECT_EQ(info.block_bytes, size_t(t.block_bytes)) << info.name;
        EXPECT_EQ(info.quantized(), kv_type_quantized(kv)) << info.name;
        EXPECT_EQ(info.quantized(), t.block_elems > 1) << info.name;
        for (const int64_t elems : {int64_t(64), int64_t(128), int64_t(4096)}) {
            EXPECT_EQ(kv_row_bytes(kv, elems), size_t(*row_bytes(ggml, uint64_t(elems))))
                << info.name << " " << elems;
        }
        if (info.quantized()) {
            EXPECT_EQ(info.block_elems, kKvQuantBlock) << info.name;
        }
    }
}

TEST(Settings, DraftModelTraitIsWhatValidateRequires) {
    for (const SpecModeInfo& m : spec_modes()) {
        SpeculativeSettings s;
        s.mode = m.kind;
        if (m.needs_draft_model) {
            EXPECT_THROW(s.validate(), Error) << m.name << " without a draft model";
            s.draft_model = "draft.gguf";
        }
        EXPECT_NO_THROW(s.validate()) << m.name;
        EXPECT_EQ(m.drafts, m.kind != SpecMode::Off) << m.name;
    }
}

TEST(Settings, InfoOfEveryKindIsItsOwnItem) {
    for (const KvPolicyInfo& p : kv_policies()) EXPECT_EQ(&kv_policy_info(p.kind), &p);
    for (const KvTypeInfo& t : kv_types()) EXPECT_EQ(&kv_type_info(t.kind), &t);
    for (const AttentionImplInfo& a : attention_impls())
        EXPECT_EQ(&attention_impl_info(a.kind), &a);
    for (const BackendKindInfo& b : backend_kinds()) EXPECT_EQ(&backend_kind_info(b.kind), &b);
    for (const TelemetryLevelInfo& l : telemetry_levels())
        EXPECT_EQ(&telemetry_level_info(l.kind), &l);
    for (const SpecModeInfo& m : spec_modes()) EXPECT_EQ(&spec_mode_info(m.kind), &m);
}

}  // namespace
}  // namespace fluoro
