#include "panels/attention_panel.h"
#include "panels/event_panel.h"
#include "panels/expert_panel.h"
#include "panels/kv_panel.h"
#include "panels/lens_panel.h"
#include "panels/overview_panel.h"
#include "panels/profiler_panel.h"
#include "panels/prompt_cache_panel.h"
#include "panels/prompt_panel.h"
#include "panels/spec_panel.h"
#include "panels/token_panel.h"

namespace fluoro::ui {

std::vector<EventPanel*> make_panels(QWidget* parent) {
    return {new AttentionPanel(parent), new OverviewPanel(parent),    new KvPanel(parent),
            new SpecPanel(parent),      new PromptCachePanel(parent), new ProfilerPanel(parent),
            new TokenPanel(parent),     new PromptPanel(parent),      new ExpertPanel(parent),
            new LensPanel(parent)};
}

}  // namespace fluoro::ui
