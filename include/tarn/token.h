/* tarn — producer fencing tokens (issue 15 "Fencing tokens"; the Epochs
 * design, ../shared/spec/002_ad0b8bb50ec6abbf.txt, "The fencing token is
 * policy; the epoch is safety"; docs/express.md "Fencing tokens").
 *
 * A stream's token mode (the stream property token_mode) is "any"
 * (cooperative: the default) or "fenced" (mandatory). A producer installs its
 * token with tarn_stream_token_install (`tarn stream fence NS/NAME --token
 * T`); opening a log for writing compares the token it was given with the
 * installed one by exact byte equality. The token is policy: it refuses a
 * stale producer at the door. What locks a stale writer out of the storage
 * is the express epoch (its fence), never the token. */
#ifndef TARN_TOKEN_H
#define TARN_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "tarn/catalog_record.h"
#include "tarn/meta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TARN_STREAM_TOKEN_MODE_PROP "token_mode"
#define TARN_TOKEN_MODE_ANY "any"
#define TARN_TOKEN_MODE_FENCED "fenced"
/* The metadata partition of installed tokens: key "/token/{ns}/{name}",
 * value the token's bytes. */
#define TARN_TOKEN_PARTITION "tarn-token"
/* A token: 1..256 bytes, none of them NUL. */
#define TARN_TOKEN_MAX 256

enum { TARN_TOKEN_ANY = 0, TARN_TOKEN_FENCED = 1 };

/* The stream's token mode: TARN_TOKEN_FENCED when its token_mode property is
 * "fenced", else TARN_TOKEN_ANY. */
int tarn_stream_token_mode(const tarn_catalog_record *stream);
/* 0 when v is a token mode's name ("any" or "fenced"), else TARN_EINVAL. */
int tarn_token_mode_check(const char *v);

/* Installs token as the stream's (compare-and-set against the version read:
 * a racing install makes this one read again and retry, so the last install
 * wins and no install is lost half-way). *previous (may be NULL) gets a
 * malloc'd copy of the token it replaced, NULL when none was installed. */
int tarn_stream_token_install(tarn_meta *m, const char *ns, const char *name, const char *token,
                              char **previous);
/* The installed token (malloc'd) in *out; TARN_ENOTFOUND when none is. */
int tarn_stream_token_get(tarn_meta *m, const char *ns, const char *name, char **out);

/* The door of every open for writing: 0 when token (NULL: none given) may
 * write stream (its record, for the mode). Mode fenced: a token is required
 * and must equal the installed one. Mode any: no token is fine; a given token
 * must equal the installed one when one is installed. A refusal is
 * TARN_EFENCED with a message that says which rule refused. */
int tarn_stream_token_check(tarn_meta *m, const tarn_catalog_record *stream, const char *token);

#ifdef __cplusplus
}
#endif
#endif
