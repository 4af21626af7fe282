/* auth_keystone.h — http.auth keystone: a request's X-Auth-Token checked
 * against Keystone v3, as keystonemiddleware's auth_token checks it for
 * Gnocchi (docs/API.md "Authentication and scope").
 *
 * A service user (http.keystone.username, password or password_file,
 * project_name and the two domains) gets a service token with
 * POST {auth_url}/v3/auth/tokens (password method), kept and renewed when
 * less than half its life, or 5 minutes, is left.  A user's token is
 * validated with GET {auth_url}/v3/auth/tokens?nocatalog (X-Auth-Token: the
 * service token, X-Subject-Token: the user's); the answer gives the user
 * id, project id, roles and expires_at.
 *
 * Cache: keyed by the token's SHA-256 (the token itself is neither kept
 * nor logged), an accepted token until min(expires_at, now +
 * http.keystone.token_cache_s), a refused one for min(10 s, token_cache_s);
 * at most http.keystone.cache_entries entries, the oldest evicted first.
 * Cost of one request: a cached token none; an uncached one one Keystone
 * call (two when the service token must be renewed first, or when Keystone
 * refused a service token it had issued), each bounded by
 * http.keystone.timeout_ms; at most http.keystone.max_validations calls at
 * once, a request past them waits up to timeout_ms for one, then 503.
 *
 * Thread-safety: every function but create and free may be called from
 * several threads at once. */
#ifndef GA_AUTH_KEYSTONE_H
#define GA_AUTH_KEYSTONE_H

#include <stddef.h>
#include <stdint.h>

#include "daemon/config/config.h"

#define AUTH_KEYSTONE_ID_MAX 256      /* user and project ids, NUL included */
#define AUTH_KEYSTONE_TOKEN_MAX 8192  /* longer X-Auth-Token values are refused */

struct auth_keystone;

/* Who a valid token speaks for. */
struct auth_keystone_ident {
    char user[AUTH_KEYSTONE_ID_MAX];    /* token.user.id */
    char project[AUTH_KEYSTONE_ID_MAX]; /* token.project.id, "" unscoped / domain-scoped */
    int admin;                          /* the role "admin" is among token.roles */
};

/* Counters (docs/COUNTERS.md, "http.keystone.*"). */
struct auth_keystone_stats {
    uint64_t validations;             /* GET /v3/auth/tokens answered by Keystone */
    uint64_t cache_hits;              /* tokens answered from the cache (either way) */
    uint64_t rejected;                /* 401: no, malformed, invalid, expired, revoked token */
    uint64_t errors;                  /* 503: Keystone unreachable or failing, or no slot */
    uint64_t evictions;               /* unexpired entries dropped for the bound */
    uint64_t service_tokens;          /* service tokens obtained */
    uint64_t cached;                  /* gauge: entries in the cache now */
};

/* Make the validator from http.keystone (validated by ga_config_validate).
 * Reads password_file when set.  Starts no connection: Keystone is first
 * asked at the first request.  0 with *out set, or GA_ECONFIG (the
 * password file: unreadable or empty), GA_ENOMEM, GA_EIO (libcurl) with
 * err. */
int auth_keystone_create(struct auth_keystone **out, const struct ga_keystone_config *cfg,
                         char *err, size_t errlen);
/* Free it (no validation may be running).  NULL ok. */
void auth_keystone_free(struct auth_keystone *k);

/* Check token (the X-Auth-Token header's value, NULL when absent).
 * Returns 0 with *id set; 401 when the token is absent or refused; 503
 * when Keystone could not say (unreachable, timed out, an unexpected
 * answer, the service user refused, max_validations busy).  why gets a
 * sentence for the error body. */
int auth_keystone_check(struct auth_keystone *k, const char *token,
                        struct auth_keystone_ident *id, char *why, size_t whylen);

/* The WWW-Authenticate value of a 401: Keystone uri="<www_authenticate_uri>".
 * Owned by k. */
const char *auth_keystone_challenge(const struct auth_keystone *k);

/* Read the counters.  NULL k: all zero. */
void auth_keystone_get_stats(const struct auth_keystone *k, struct auth_keystone_stats *out);

#endif
