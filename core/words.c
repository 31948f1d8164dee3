/*
 * words.c - the API names of messages, in C and in Python (words.h).
 *
 * Only names a message tells its reader to call or pass live here;
 * environment variables (RNGSNAP_CONFIG, RNGSNAP_PLUGIN_PATH) and file
 * names are the same in every language and stay in the messages.
 */
#include <stdio.h>
#include <string.h>

#include "context.h"
#include "words.h"

static const char *const rs_words[RS_W_COUNT][RS_LANG_COUNT] = {
    /*                     C                         Python */
    [RS_W_OPEN]           = {"rngsnap_open", "rngsnap.Context()"},
    [RS_W_RESUME]         = {"RNGSNAP_RESUME", "resume=True"},
    [RS_W_SET_RANK]       = {"rngsnap_set_rank", "ctx.set_rank()"},
    [RS_W_SEED_ALL]       = {"rngsnap_seed_all", "ctx.seed_all()"},
    [RS_W_STREAM_FIND]    = {"rngsnap_stream_find", "ctx.stream()"},
    [RS_W_STREAM_AT]      = {"rngsnap_stream_at", "ctx.streams()"},
    [RS_W_GENERATE]       = {"rngsnap_generate", "s.generate()"},
    [RS_W_RESERVE]        = {"rngsnap_reserve", "s.reserve()"},
    [RS_W_POSITION]       = {"rngsnap_stream_position", "s.position()"},
    [RS_W_DERIVE]         = {"rngsnap_derive", "s.derive()"},
    [RS_W_GENERATE_AT]    = {"rngsnap_generate_at", "k.generate()"},
    [RS_W_REGISTER_STATE] = {"rngsnap_register_state",
                             "ctx.register_state()"},
    [RS_W_UNREGISTER_STATE] = {"rngsnap_unregister_state",
                               "ctx.unregister_state()"},
    [RS_W_SAVE_REPLACE]   = {"RNGSNAP_SAVE_REPLACE", "replace=True"},
    [RS_W_LOAD]           = {"rngsnap_load", "ctx.load()"},
    [RS_W_LOAD_RANKS]     = {"rngsnap_load_ranks", "ctx.load_ranks()"},
    [RS_W_LOAD_FORK]      = {"RNGSNAP_LOAD_FORK (rngsnap_mpi_load)",
                             "fork=True to ctx.load_ranks()"},
    [RS_W_LEDGER_OPEN]    = {"rngsnap_ledger_open", "ctx.ledger()"},
    [RS_W_LEDGER_NOTE]    = {"rngsnap_ledger_note", "led.note()"},
    [RS_W_LEDGER_STEP]    = {"rngsnap_ledger_step", "led.step()"},
    [RS_W_LEDGER_CLOSE]   = {"rngsnap_ledger_close", "led.close()"},
    /* Before its load a context cannot know which one the job will use:
     * name them all (a load_state_dict job must not read "ctx.load()"). */
    [RS_W_LOAD_ANY]       = {"rngsnap_load, rngsnap_load_mem or "
                             "rngsnap_mpi_load",
                             "ctx.load(), ctx.load_state_dict(), "
                             "ctx.load_bytes() or ctx.load_ranks(), "
                             "whichever this job resumes with,"},
    [RS_W_REGISTER_APP]   = {"rngsnap_register_state",
                             "ctx.register_state() or "
                             "ctx.register_generator()"},
    [RS_W_CONFIG]         = {"the ini_path of rngsnap_open",
                             "Context(config=...)"},
    /* "app state X: load callback returned 1" / "...: its load
     * callable failed" (the binding adds what the callable raised). */
    [RS_W_CALLBACK]       = {"callback", "callable"},
    [RS_W_BRANCH]         = {"rngsnap_branch", "ctx.branch()"},
    [RS_W_CLOSE]          = {"rngsnap_close", "ctx.close()"},
    /* "(...)": ctx.set_coords() with no arguments clears them */
    [RS_W_SET_COORDS]     = {"rngsnap_set_coords", "ctx.set_coords(...)"},
    [RS_W_SAVE_PER_RANK_FILES] = {"RNGSNAP_SAVE_PER_RANK_FILES",
                                  "per_rank_files=True"},
};

/* App states that a host language's own layer registers as a family,
 * and what to say when a checkpoint has one and the context none. */
#define RS_TRACK_HINT "did you call rngsnap.torch.track(ctx) before load?"
#define RS_SAMPLER_HINT                                                    \
    "did you build the rngsnap.torch.ResumableSampler before load? it "    \
    "registers its position when it is built, and the load restores it"
static const struct {
    rs_lang lang;
    const char *prefix;
    const char *hint;
} rs_layer_states[] = {
    {RS_LANG_PYTHON, "rngsnap.fingerprint", RS_TRACK_HINT},
    {RS_LANG_PYTHON, "torch.", RS_TRACK_HINT},
    {RS_LANG_PYTHON, "rngsnap.sampler", RS_SAMPLER_HINT},
};

void rs_set_lang(rngsnap *ctx, rs_lang lang)
{
    if (ctx && (unsigned)lang < RS_LANG_COUNT)
        ctx->lang = lang;
}

const char *rs_word(const rngsnap *ctx, rs_word_id w)
{
    rs_lang lang = ctx ? ctx->lang : RS_LANG_C;
    return rs_words[w][lang];
}

static int starts_with(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    return len >= n && memcmp(s, prefix, n) == 0;
}

void rs_callback_failed(const rngsnap *ctx, const char *which, int rc,
                        char *buf, size_t len)
{
    if (ctx && ctx->lang == RS_LANG_PYTHON)
        /* rc is the binding's, not the user's: it says "raised" next */
        snprintf(buf, len, "its %s %s failed", which,
                 rs_word(ctx, RS_W_CALLBACK));
    else
        snprintf(buf, len, "%s %s returned %d", which,
                 rs_word(ctx, RS_W_CALLBACK), rc);
}

const char *rs_extra_state_hint(const rngsnap *ctx, const char *name,
                                size_t len)
{
    for (size_t i = 0; i < sizeof rs_layer_states / sizeof *rs_layer_states;
         i++) {
        const char *prefix = rs_layer_states[i].prefix;
        if (rs_layer_states[i].lang != ctx->lang
            || !starts_with(name, len, prefix))
            continue;
        /* One of the family registered here: the layer ran, and the
         * missing state has another cause (e.g. another device count). */
        size_t a = 0;
        while (a < ctx->napps
               && !starts_with(ctx->apps[a].name, strlen(ctx->apps[a].name),
                               prefix))
            a++;
        if (a == ctx->napps)
            return rs_layer_states[i].hint;
    }
    return NULL;
}
