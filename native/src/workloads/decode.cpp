#include "decode.hpp"

#include <cmath>

#include "../collective/collective.hpp"

namespace graphrt {
namespace {

template <class T>
void upload(Backend& b, DeviceBuffer<T>& buf, const std::vector<T>& host) {
  b.memcpy_h2d(buf.get(), host.data(), buf.bytes());
}

}  // namespace

DecodeWorkload::DecodeWorkload(Backend& b, const Request& req, Shard shard)
    : backend_(b),
      toggles_(req.toggles),
      shard_(shard),
      allreduce_(req.toggles.allreduce && shard.world > 1),
      layers_(req.params.layers),
      kpl_(req.params.kernels_per_layer),
      h_(req.params.hidden),
      max_pos_(req.params.max_pos),
      emb_(b, std::size_t{max_pos_} * h_),
      g_norm_(b, std::size_t{layers_} * h_),
      g_final_(b, h_),
      wq_(b, std::size_t{layers_} * h_ * h_),
      wkv_(b, std::size_t{layers_} * 2 * h_ * h_),
      wo_(b, std::size_t{layers_} * h_ * h_),
      w1_(b, std::size_t{layers_} * h_ * h_),
      w2_(b, std::size_t{layers_} * h_ * h_),
      bias_(b, std::size_t{layers_} * h_),
      k_cache_(b, std::size_t{layers_} * max_pos_ * h_),
      v_cache_(b, std::size_t{layers_} * max_pos_ * h_),
      x_(b, h_),
      h_buf_(b, h_),
      q_(b, h_),
      kv_(b, 2 * std::size_t{h_}),
      scores_(b, max_pos_),
      att_(b, h_),
      u_(b, h_),
      out_(b, h_),
      pos_(b, 1) {
  if (toggles_.split_combine) {  // the split's partials: every (chunk, i) of the longest attention
    part_a_ = DeviceBuffer<float>(b, std::size_t{kernels::attn_chunks(max_pos_)} * h_);
    part_md_ = DeviceBuffer<float>(b, 2 * std::size_t{kernels::attn_chunks(max_pos_)});
  }
}

void DecodeWorkload::reset(std::uint64_t seed) {
  // The weights are read-only to every kernel: uploaded once per seed (generating them is most of
  // a rep's overhead at 93 layers x hidden 256), not on every reset. The state is reset always.
  if (weights_seed_ != seed) upload_weights(seed);
  backend_.memset(k_cache_.get(), 0, k_cache_.bytes());
  backend_.memset(v_cache_.get(), 0, v_cache_.bytes());
  backend_.memset(out_.get(), 0, out_.bytes());
  backend_.memset(pos_.get(), 0, pos_.bytes());
  host_pos_ = 0;
  lazy_scores_.reset();  // first use after a reset allocates again
}

void DecodeWorkload::upload_weights(std::uint64_t seed) {
  weights_seed_.reset();  // a failed upload leaves no stale claim
  const float w = 1.0f / std::sqrt(static_cast<float>(h_));
  upload(backend_, emb_, seeded_floats(seed, 1, emb_.size(), 1.0f));
  upload(backend_, g_norm_, seeded_floats(seed, 2, g_norm_.size(), 0.25f));
  upload(backend_, g_final_, seeded_floats(seed, 3, g_final_.size(), 0.25f));
  upload(backend_, wq_, seeded_floats(seed, 4, wq_.size(), w));
  upload(backend_, wkv_, seeded_floats(seed, 5, wkv_.size(), w));
  upload(backend_, wo_, seeded_floats(seed, 6, wo_.size(), w));
  // A shard's own MLP-up weights (rank 0's are the single-rank weights).
  const std::uint64_t w1_stream = allreduce_ ? 7 + 1000 * static_cast<std::uint64_t>(shard_.rank) : 7;
  upload(backend_, w1_, seeded_floats(seed, w1_stream, w1_.size(), w));
  upload(backend_, w2_, seeded_floats(seed, 8, w2_.size(), w));
  upload(backend_, bias_, seeded_floats(seed, 9, bias_.size(), 0.01f));
  weights_seed_ = seed;
}

float* DecodeWorkload::scores(Context& ctx) {
  if (!toggles_.lazy_init) return scores_.get();
  if (!lazy_scores_.get()) lazy_scores_ = DeviceBuffer<float>(ctx.backend, max_pos_);
  return lazy_scores_.get();
}

void DecodeWorkload::run_step(Context& ctx) {
  namespace k = kernels;
  const StreamRaw main = ctx.compute;
  const std::uint32_t h = h_;
  const std::size_t hh = std::size_t{h} * h;
  const float scale = 1.0f / std::sqrt(static_cast<float>(h));
  launch<k::EmbedKernel>(ctx, main, h, {out_.get(), emb_.get(), pos_.get(), x_.get(), h});
  for (std::uint32_t l = 0; l < layers_; ++l) {
    float* kc = k_cache_.get() + std::size_t{l} * max_pos_ * h;
    float* vc = v_cache_.get() + std::size_t{l} * max_pos_ * h;
    float* k_frozen = nullptr;
    float* v_frozen = nullptr;
    if (toggles_.freeze_pointer) {  // the bug: a host-computed address becomes a kernel argument
      k_frozen = kc + std::size_t{host_pos_} * h;
      v_frozen = vc + std::size_t{host_pos_} * h;
    }
    launch<k::RmsNormKernel>(ctx, main, h, {x_.get(), g_norm_.get() + std::size_t{l} * h, h_buf_.get(), h});
    ctx.fork();
    launch<k::MatvecKernel>(ctx, ctx.side(), 2 * h * k::kWarp,
                            {wkv_.get() + 2 * hh * l, h_buf_.get(), nullptr, kv_.get(), 2 * h, h, 0});
    launch<k::KvWriteKernel>(ctx, ctx.side(), h, {kv_.get(), pos_.get(), kc, vc, k_frozen, v_frozen, h});
    launch<k::MatvecKernel>(ctx, main, h * k::kWarp, {wq_.get() + hh * l, h_buf_.get(), nullptr, q_.get(), h, h, 0});
    ctx.join();
    float* sc = scores(ctx);
    launch<k::AttnScoresKernel>(ctx, main, max_pos_ * k::kWarp, {q_.get(), kc, pos_.get(), sc, h, max_pos_, scale});
    if (toggles_.split_combine) {  // the fission: chunks x h partials, then the merge (bit-identical)
      const std::uint32_t chunks = k::attn_chunks(max_pos_);
      launch<k::AttnPartialKernel>(ctx, main, chunks * h,
                                   {sc, vc, pos_.get(), part_a_.get(), part_md_.get(), h, chunks});
      launch<k::AttnMergeKernel>(ctx, main, h, {part_a_.get(), part_md_.get(), pos_.get(), att_.get(), h});
    } else {
      launch<k::AttnCombineKernel>(ctx, main, h, {sc, vc, pos_.get(), att_.get(), h});
    }
    launch<k::MatvecKernel>(ctx, main, h * k::kWarp, {wo_.get() + hh * l, att_.get(), x_.get(), x_.get(), h, h, 0});
    launch<k::MatvecKernel>(ctx, main, h * k::kWarp, {w1_.get() + hh * l, x_.get(), nullptr, u_.get(), h, h, 1});
    if (allreduce_) all_reduce(ctx, main, u_.get(), h);
    launch<k::MatvecKernel>(ctx, main, h * k::kWarp, {w2_.get() + hh * l, u_.get(), x_.get(), x_.get(), h, h, 0});
    for (std::uint32_t f = kDecodeBaseKernels; f < kpl_; ++f)
      launch<k::BiasKernel>(ctx, main, h, {x_.get(), bias_.get() + std::size_t{l} * h, h});
  }
  launch<k::RmsNormKernel>(ctx, main, h, {x_.get(), g_final_.get(), out_.get(), h});
  launch<k::AdvancePosKernel>(ctx, main, 1, {pos_.get(), max_pos_});
  host_pos_ = (host_pos_ + 1) % max_pos_;
}

std::vector<std::byte> DecodeWorkload::output() {
  return out_.to_host_bytes();
}

std::vector<std::string> DecodeWorkload::inert_toggles() const {
  std::vector<std::string> out;
  if (toggles_.pin) out.emplace_back("pin");
  if (toggles_.allreduce && !allreduce_) out.emplace_back("allreduce");  // one rank: nothing to reduce
  return out;
}

}  // namespace graphrt
