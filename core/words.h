/*
 * words.h - the API names that messages tell their reader to use.
 *
 * A message that says what to call or pass ("pass RNGSNAP_SAVE_REPLACE to
 * replace it") names it in the language of the context's host: the C
 * API's spelling by default, the Python package's ("pass replace=True")
 * once its binding calls rs_set_lang.  One table in words.c holds both
 * spellings of every name, side by side.  Internal: the Python extension
 * links the core statically and is the only caller of rs_set_lang.
 */
#ifndef RNGSNAP_CORE_WORDS_H
#define RNGSNAP_CORE_WORDS_H

#include <stddef.h>

#include <rngsnap.h>

typedef enum rs_lang {
    RS_LANG_C,      /* the default: C users, the rngsnap tool */
    RS_LANG_PYTHON, /* the rngsnap Python package             */
    RS_LANG_COUNT
} rs_lang;

typedef enum rs_word_id {
    RS_W_OPEN,           /* open a context                      */
    RS_W_RESUME,         /* the resume-gate open flag           */
    RS_W_SET_RANK,
    RS_W_SEED_ALL,
    RS_W_STREAM_FIND,
    RS_W_STREAM_AT,      /* walking the registry by index       */
    RS_W_GENERATE,
    RS_W_RESERVE,
    RS_W_POSITION,
    RS_W_DERIVE,
    RS_W_GENERATE_AT,    /* a keyed stream's draw               */
    RS_W_REGISTER_STATE,
    RS_W_UNREGISTER_STATE,
    RS_W_SAVE_REPLACE,   /* the save flag that replaces a file  */
    RS_W_LOAD,
    RS_W_LOAD_RANKS,
    RS_W_LOAD_FORK,      /* how to fork onto another world size */
    RS_W_LEDGER_OPEN,    /* the divergence ledger (ledger.c)    */
    RS_W_LEDGER_NOTE,
    RS_W_LEDGER_STEP,
    RS_W_LEDGER_CLOSE,
    RS_W_LOAD_ANY,       /* every load a job may resume with    */
    RS_W_REGISTER_APP,   /* every call that registers app state */
    RS_W_CONFIG,         /* how a job names its rng.ini         */
    RS_W_CALLBACK,       /* an app state's save/load function   */
    RS_W_BRANCH,         /* leave a resumed run on purpose       */
    RS_W_CLOSE,          /* close a context                     */
    RS_W_SET_COORDS,     /* a rank's parallel coordinates        */
    RS_W_SAVE_PER_RANK_FILES, /* the save flag: a file per rank  */
    RS_W_COUNT
} rs_word_id;

/* Messages of ctx name the API as lang spells it.  Call it once, right
 * after rngsnap_open, before ctx is shared with other threads. */
void rs_set_lang(rngsnap *ctx, rs_lang lang);

/* The spelling of w for ctx's language (C for a NULL ctx). */
const char *rs_word(const rngsnap *ctx, rs_word_id w);

/* "load callback returned 6" (C) / "its load callable failed" (Python)
 * into buf: which is "save" or "load", rc what the function returned. */
void rs_callback_failed(const rngsnap *ctx, const char *which, int rc,
                        char *buf, size_t len);

/* What a load adds to its message when the checkpoint has app state
 * name (len bytes, no NUL) that ctx lacks, because ctx's host layer
 * registers such states itself and ctx has none of them (Python:
 * rngsnap.torch.track was not called); NULL when there is nothing to
 * add. */
const char *rs_extra_state_hint(const rngsnap *ctx, const char *name,
                                size_t len);

#endif /* RNGSNAP_CORE_WORDS_H */
