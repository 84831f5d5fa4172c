// Compact little-endian blobs for the per-row arrays the store keeps (top-N alternatives, time
// per category, drafted tokens, KV blocks, attention weights, KV eviction positions). Layouts are
// in docs/STORAGE.md; decoding checks sizes and throws StoreError on a malformed blob.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "telemetry/events.h"

namespace fluoro::app {

// n × (int32 id, float32 logprob)
std::vector<uint8_t> encode_top(std::span<const TokenProb> top);
std::vector<TokenProb> decode_top(std::span<const uint8_t> blob);

// kTimeCategories × int64 ns, in TimeCategory order
std::vector<uint8_t> encode_op_ns(const CategoryTimes& t);
CategoryTimes decode_op_ns(std::span<const uint8_t> blob);

// n × (int32 id, float32 q, float32 p, uint8 accepted)
std::vector<uint8_t> encode_drafted(std::span<const DraftToken> d);
std::vector<DraftToken> decode_drafted(std::span<const uint8_t> blob);

// int32 block_tokens, int64 bytes_per_token, then n × (int32 owner, uint8 state, int32 tokens)
std::vector<uint8_t> encode_kv(const KvSnapshot& s);
void decode_kv(std::span<const uint8_t> blob, KvSnapshot& s);

// int32 layer, int32 head, int64 first_row, int64 n_rows, int64 n_cols, then float32 weights.
// key_begin is not in the blob (the snapshots table has a column for it since schema v3).
std::vector<uint8_t> encode_attention(const AttentionSnapshot& s);
void decode_attention(std::span<const uint8_t> blob, AttentionSnapshot& s);

// n × int32 token id
std::vector<uint8_t> encode_ids(std::span<const int32_t> ids);
std::vector<int32_t> decode_ids(std::span<const uint8_t> blob);

// n × (uint32 byte length, bytes)
std::vector<uint8_t> encode_pieces(std::span<const std::string> pieces);
std::vector<std::string> decode_pieces(std::span<const uint8_t> blob);

// n × (float32 entropy, float32 top_k_mass, float32 below_threshold, float32 sink_mass)
std::vector<uint8_t> encode_head_stats(std::span<const AttentionHeadStats> heads);
std::vector<AttentionHeadStats> decode_head_stats(std::span<const uint8_t> blob);

// Positions as runs of consecutive values: n × (int64 first, int64 count). A KV policy keeps and
// evicts long consecutive spans (sinks, the recent window), so this stays a few bytes; any sequence
// round-trips exactly. Decoding rejects a count below 1 and more than max_values values in all.
std::vector<uint8_t> encode_positions(std::span<const int64_t> positions);
std::vector<int64_t> decode_positions(std::span<const uint8_t> blob, size_t max_values);

// A step's expert routing (ExpertRouting): int32 n_layer, n_expert, n_used, int64 n_tokens, then
// n_layer × n_tokens × n_used × (int16 expert, -1 where a pass skipped the layer; float32
// weight). Empty: the step had no routing (null). Decoding checks the header against the blob's
// size (so it allocates no more than the blob holds) and every expert against n_expert.
std::vector<uint8_t> encode_experts(const ExpertRouting* r);
std::shared_ptr<const ExpertRouting> decode_experts(std::span<const uint8_t> blob);

// A step's trace (StepTrace, level Trace): uint32 n_names, n_names × (uint32 length, bytes); int32
// threads; int64 dropped; uint32 n_ops, n_ops × (int64 start_ns, int64 end_ns, int32 name, int32
// layer, int32 rows, uint8 category, float64 bytes, float64 flops, int32 weight_type, 2 × int32
// shape); uint32 n_workers, n_workers ×
// (int64 start_ns, int64 end_ns, int32 worker, int32 tasks). Empty: no trace (null). Decoding
// checks every count against the bytes left before it allocates, then step_trace_error.
std::vector<uint8_t> encode_trace(const StepTrace* t);
std::shared_ptr<const StepTrace> decode_trace(std::span<const uint8_t> blob);

}  // namespace fluoro::app
