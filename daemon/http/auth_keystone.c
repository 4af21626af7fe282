/* auth_keystone.c — Keystone v3 token validation with a bounded cache (see
 * auth_keystone.h).
 *
 * Locks: mu guards the cache, the counters and the count of validations in
 * flight; svc_mu guards the service token and is held while one is
 * obtained, so that only one request asks Keystone for it.  Never both at
 * once; no Keystone call is made under mu. */
#include "daemon/http/auth_keystone.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <nettle/base16.h>
#include <nettle/sha2.h>
#include <jansson.h>

#include "proto/base/hmap.h"
#include "proto/base/log.h"
#include "proto/ga_err.h"
#include "proto/ts_parse.h"

#define BODY_MAX (1 << 20)            /* a Keystone answer read, at most */
#define NEGATIVE_S 10                 /* a refused token is remembered this long at most */
#define SVC_MARGIN_S 300              /* renew the service token this long before it expires */

enum { FREE = 0, ACCEPTED, REFUSED };

struct entry {
    uint8_t digest[SHA256_DIGEST_SIZE];    /* SHA-256 of the token */
    int state;                        /* FREE, ACCEPTED, REFUSED */
    int64_t until;                    /* wall-clock seconds: valid while now < until */
    struct auth_keystone_ident id;
};

struct auth_keystone {
    const struct ga_keystone_config *cfg;
    char tokens_url[600];             /* {auth_url}/v3/auth/tokens?nocatalog */
    char challenge[600];              /* Keystone uri="..." */
    char *password;

    pthread_mutex_t mu;
    pthread_cond_t slot_free;
    int inflight;                     /* Keystone validations running */
    struct entry *ring;               /* cfg->cache_entries slots, in insertion order */
    size_t ncap, nused, next;         /* slots allocated, ever used, the next to fill */
    struct ga_hmap map;               /* digest's first 8 bytes -> ring index */
    struct auth_keystone_stats st;
    struct ga_ratelimit err_log;

    pthread_mutex_t svc_mu;
    char svc_token[AUTH_KEYSTONE_TOKEN_MAX];
    int64_t svc_renew_at;             /* wall-clock seconds */
};

static int64_t now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec;
}

static uint64_t digest_hash(const uint8_t d[SHA256_DIGEST_SIZE])
{
    uint64_t h;
    memcpy(&h, d, sizeof h);
    return h;
}

/* ---- the cache (mu held) --------------------------------------------------- */

static struct entry *cache_find(struct auth_keystone *k, const uint8_t d[SHA256_DIGEST_SIZE],
                                struct ga_hmap_it *it)
{
    *it = ga_hmap_find(&k->map, digest_hash(d));
    uint32_t v;
    while (ga_hmap_next(it, &v))
        if (memcmp(k->ring[v].digest, d, SHA256_DIGEST_SIZE) == 0)
            return &k->ring[v];
    return NULL;
}

/* Drop ring slot i from the map and free it. */
static void cache_drop(struct auth_keystone *k, size_t i)
{
    struct ga_hmap_it it = ga_hmap_find(&k->map, digest_hash(k->ring[i].digest));
    uint32_t v;
    while (ga_hmap_next(&it, &v))
        if (v == i) {
            ga_hmap_del(&k->map, &it);
            break;
        }
    k->ring[i].state = FREE;
}

/* Remember a token's verdict in the next slot of the ring, the oldest
 * entry's when the ring is full.  Memory shortage: not remembered. */
static void cache_put(struct auth_keystone *k, const uint8_t d[SHA256_DIGEST_SIZE], int state,
                      int64_t until, const struct auth_keystone_ident *id)
{
    struct ga_hmap_it it;
    struct entry *e = cache_find(k, d, &it);
    if (e) {                                   /* another request got there first */
        e->state = state;
        e->until = until;
        if (id)
            e->id = *id;
        return;
    }
    size_t cap = (size_t)k->cfg->cache_entries;
    if (k->next == k->ncap && k->ncap < cap) {
        size_t n = k->ncap ? k->ncap * 2 : 64;
        if (n > cap)
            n = cap;
        struct entry *r = realloc(k->ring, n * sizeof *r);
        if (!r)
            return;
        memset(r + k->ncap, 0, (n - k->ncap) * sizeof *r);
        k->ring = r;
        k->ncap = n;
    }
    size_t i = k->next;
    if (k->ring[i].state != FREE) {
        if (now_s() < k->ring[i].until)
            k->st.evictions++;
        cache_drop(k, i);
    }
    if (ga_hmap_put(&k->map, NULL, digest_hash(d), (uint32_t)i) < 0)
        return;
    struct entry *n = &k->ring[i];
    memcpy(n->digest, d, SHA256_DIGEST_SIZE);
    n->state = state;
    n->until = until;
    if (id)
        n->id = *id;
    else
        memset(&n->id, 0, sizeof n->id);
    k->next = (i + 1) % cap;
}

/* ---- talking to Keystone ---------------------------------------------------- */

struct reply {
    long status;
    char *body;
    size_t len;
    char *subject;                    /* X-Subject-Token's value, when asked for */
    size_t subject_cap;
};

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud)
{
    struct reply *r = ud;
    size_t n = size * nmemb;
    if (r->len + n > BODY_MAX)
        return 0;                              /* aborts the transfer */
    char *b = realloc(r->body, r->len + n + 1);
    if (!b)
        return 0;
    memcpy(b + r->len, p, n);
    r->len += n;
    b[r->len] = '\0';
    r->body = b;
    return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud)
{
    struct reply *r = ud;
    size_t n = size * nmemb;
    static const char name[] = "x-subject-token:";
    if (r->subject && n > sizeof name - 1 && strncasecmp(p, name, sizeof name - 1) == 0) {
        const char *v = p + sizeof name - 1;
        size_t vl = n - (sizeof name - 1);
        while (vl && (*v == ' ' || *v == '\t'))
            v++, vl--;
        while (vl && isspace((unsigned char)v[vl - 1]))
            vl--;
        if (vl < r->subject_cap) {
            memcpy(r->subject, v, vl);
            r->subject[vl] = '\0';
        }
    }
    return n;
}

/* One request to {auth_url}/v3/auth/tokens.  0 with r->status set (any
 * HTTP status), or -1 with why (no answer: connection, timeout, TLS). */
static int ks_request(struct auth_keystone *k, const char *method, struct curl_slist *hdrs,
                      const char *body, struct reply *r, char *why, size_t whylen)
{
    char cerr[CURL_ERROR_SIZE] = "";
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(why, whylen, "libcurl could not make a handle");
        return -1;
    }
    curl_easy_setopt(c, CURLOPT_URL, k->tokens_url);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)k->cfg->timeout_ms);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, (long)k->cfg->timeout_ms);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, r);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, cerr);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (body)
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    else
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    CURLcode rc = curl_easy_perform(c);
    if (rc == CURLE_OK)
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    else
        snprintf(why, whylen, "Keystone at %s did not answer: %s", k->cfg->auth_url,
                 cerr[0] ? cerr : curl_easy_strerror(rc));
    curl_easy_cleanup(c);
    return rc == CURLE_OK ? 0 : -1;
}

/* "2026-12-07T13:00:00.000000Z" -> seconds since the epoch, or -1. */
static int64_t parse_time(const char *s)
{
    int64_t ns;
    if (!s || ts_parse_iso8601(s, strlen(s), &ns, NULL, 0) < 0 || ns < 0)
        return -1;
    return ns / 1000000000;
}

/* The "token" object of a Keystone answer: identity and expiry.  0 or -1
 * with why. */
static int parse_token(const char *body, struct auth_keystone_ident *id, int64_t *expires,
                       char *why, size_t whylen)
{
    json_error_t je;
    json_t *root = body ? json_loads(body, 0, &je) : NULL;
    json_t *tok = json_object_get(root, "token");
    const char *user = json_string_value(json_object_get(json_object_get(tok, "user"), "id"));
    const char *proj = json_string_value(json_object_get(json_object_get(tok, "project"), "id"));
    int64_t exp = parse_time(json_string_value(json_object_get(tok, "expires_at")));
    int rc = -1;
    memset(id, 0, sizeof *id);
    if (!user || !user[0] || exp < 0) {
        snprintf(why, whylen, "Keystone's answer has no token.user.id or expires_at");
        goto out;
    }
    if (strlen(user) >= sizeof id->user || (proj && strlen(proj) >= sizeof id->project)) {
        snprintf(why, whylen, "Keystone's answer has a user or project id over %d bytes",
                 AUTH_KEYSTONE_ID_MAX - 1);
        goto out;
    }
    snprintf(id->user, sizeof id->user, "%s", user);
    snprintf(id->project, sizeof id->project, "%s", proj ? proj : "");
    size_t i;
    json_t *role;
    json_array_foreach(json_object_get(tok, "roles"), i, role) {
        const char *name = json_string_value(json_object_get(role, "name"));
        if (name && strcmp(name, "admin") == 0)
            id->admin = 1;
    }
    *expires = exp;
    rc = 0;
out:
    json_decref(root);
    return rc;
}

/* The service token into out[outcap]: the kept one, or a new one when it is
 * due for renewal or equals stale (Keystone refused it).  0, or 503 with
 * why. */
static int service_token(struct auth_keystone *k, const char *stale, char *out, size_t outcap,
                         char *why, size_t whylen)
{
    int rc = 503;
    pthread_mutex_lock(&k->svc_mu);
    int64_t now = now_s();
    int fresh = k->svc_token[0] && now < k->svc_renew_at;
    if (fresh && !(stale && strcmp(stale, k->svc_token) == 0)) {
        snprintf(out, outcap, "%s", k->svc_token);
        pthread_mutex_unlock(&k->svc_mu);
        return 0;
    }
    const struct ga_keystone_config *c = k->cfg;
    json_t *j = json_pack("{s:{s:{s:[s], s:{s:{s:s, s:{s:s}, s:s}}}, s:{s:{s:s, s:{s:s}}}}}",
                          "auth", "identity", "methods", "password", "password", "user",
                          "name", c->username, "domain", "name", c->user_domain_name,
                          "password", k->password, "scope", "project", "name", c->project_name,
                          "domain", "name", c->project_domain_name);
    char *body = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    struct curl_slist *h2 = h ? curl_slist_append(h, "Accept: application/json") : NULL;
    char subject[AUTH_KEYSTONE_TOKEN_MAX] = "";
    struct reply r = { .subject = subject, .subject_cap = sizeof subject };
    if (!body || !h2) {
        snprintf(why, whylen, "out of memory asking Keystone for a service token");
        goto out;
    }
    if (ks_request(k, "POST", h2, body, &r, why, whylen) < 0)
        goto out;
    if (r.status == 401 || r.status == 403) {
        snprintf(why, whylen, "Keystone refused the service user's credentials "
                 "(http.keystone.username \"%s\", project \"%s\"): HTTP %ld",
                 c->username, c->project_name, r.status);
        goto out;
    }
    struct auth_keystone_ident sid;
    int64_t exp;
    char pwhy[160];
    if (r.status != 201 || !subject[0] || parse_token(r.body, &sid, &exp, pwhy, sizeof pwhy) < 0) {
        snprintf(why, whylen, "Keystone gave no service token: HTTP %ld%s%s", r.status,
                 r.status == 201 ? ", " : "", r.status == 201 ? (subject[0] ? pwhy :
                 "no X-Subject-Token") : "");
        goto out;
    }
    int64_t life = exp - now, margin = life / 2 < SVC_MARGIN_S ? life / 2 : SVC_MARGIN_S;
    snprintf(k->svc_token, sizeof k->svc_token, "%s", subject);
    k->svc_renew_at = exp - margin;
    snprintf(out, outcap, "%s", subject);
    pthread_mutex_lock(&k->mu);
    k->st.service_tokens++;
    pthread_mutex_unlock(&k->mu);
    ga_log(GA_LOG_INFO, "keystone_service_token", "user=%s project=%s expires_in_s=%lld",
           c->username, c->project_name, (long long)life);
    rc = 0;
out:
    pthread_mutex_unlock(&k->svc_mu);
    free(body);
    free(r.body);
    curl_slist_free_all(h2 ? h2 : h);
    return rc;
}

/* Ask Keystone about token.  0 (valid: *id, *expires), 401 (Keystone says
 * it is not valid), 503 with why. */
static int ask_keystone(struct auth_keystone *k, const char *token,
                        struct auth_keystone_ident *id, int64_t *expires, char *why,
                        size_t whylen)
{
    char *service = malloc(AUTH_KEYSTONE_TOKEN_MAX), *hbuf = malloc(AUTH_KEYSTONE_TOKEN_MAX + 32);
    int rc = 503;
    if (!service || !hbuf) {
        snprintf(why, whylen, "out of memory validating a token");
        goto out;
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (service_token(k, attempt ? service : NULL, service, AUTH_KEYSTONE_TOKEN_MAX, why,
                          whylen) != 0)
            goto out;
        struct curl_slist *h = NULL, *t;
        int hdrs = 0;                          /* headers appended */
        snprintf(hbuf, AUTH_KEYSTONE_TOKEN_MAX + 32, "X-Auth-Token: %s", service);
        if ((t = curl_slist_append(h, hbuf)))
            h = t, hdrs++;
        snprintf(hbuf, AUTH_KEYSTONE_TOKEN_MAX + 32, "X-Subject-Token: %s", token);
        if (h && (t = curl_slist_append(h, hbuf)))
            h = t, hdrs++;
        if (h && (t = curl_slist_append(h, "Accept: application/json")))
            h = t, hdrs++;
        struct reply r = { 0 };
        int qrc = -1;
        if (hdrs == 3)
            qrc = ks_request(k, "GET", h, NULL, &r, why, whylen);
        else
            snprintf(why, whylen, "out of memory validating a token");
        curl_slist_free_all(h);
        if (qrc < 0) {
            free(r.body);
            goto out;
        }
        pthread_mutex_lock(&k->mu);
        k->st.validations++;
        pthread_mutex_unlock(&k->mu);
        if (r.status == 200) {
            rc = parse_token(r.body, id, expires, why, whylen) == 0 ? 0 : 503;
        } else if (r.status == 404) {
            snprintf(why, whylen, "the token is not valid (unknown, expired or revoked)");
            rc = 401;
        } else if (r.status == 401 && attempt == 0) {
            free(r.body);
            continue;                          /* the service token: renew it, once */
        } else if (r.status == 401 || r.status == 403) {
            snprintf(why, whylen, "Keystone does not let the service user (http.keystone."
                     "username \"%s\") validate tokens: HTTP %ld; it needs the service or "
                     "admin role", k->cfg->username, r.status);
        } else {
            snprintf(why, whylen, "Keystone answered the token validation with HTTP %ld",
                     r.status);
        }
        free(r.body);
        goto out;
    }
out:
    free(service);
    free(hbuf);
    return rc;
}

/* ---- the entry point -------------------------------------------------------- */

static int token_ok(const char *t, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)t[i] <= ' ' || (unsigned char)t[i] >= 0x7f)
            return 0;
    return 1;
}

int auth_keystone_check(struct auth_keystone *k, const char *token,
                        struct auth_keystone_ident *id, char *why, size_t whylen)
{
    size_t tl = token ? strnlen(token, AUTH_KEYSTONE_TOKEN_MAX + 1) : 0;
    if (!tl || tl > AUTH_KEYSTONE_TOKEN_MAX || !token_ok(token, tl)) {
        snprintf(why, whylen, !tl ? "authentication required: send a Keystone token in the "
                 "X-Auth-Token header" : "the X-Auth-Token header is not a Keystone token "
                 "(over %d bytes, or spaces or control characters)", AUTH_KEYSTONE_TOKEN_MAX);
        pthread_mutex_lock(&k->mu);
        k->st.rejected++;
        pthread_mutex_unlock(&k->mu);
        return 401;
    }
    uint8_t d[SHA256_DIGEST_SIZE];
    struct sha256_ctx sc;
    sha256_init(&sc);
    sha256_update(&sc, tl, (const uint8_t *)token);
    sha256_digest(&sc, sizeof d, d);
    char tag[BASE16_ENCODE_LENGTH(SHA256_DIGEST_SIZE) + 1];
    base16_encode_update(tag, sizeof d, d);
    tag[16] = '\0';                            /* the logs name a token by this much */

    pthread_mutex_lock(&k->mu);
    struct ga_hmap_it it;
    struct entry *e = k->ring ? cache_find(k, d, &it) : NULL;
    int64_t now = now_s();
    if (e && now < e->until) {
        int rc = e->state == ACCEPTED ? 0 : 401;
        if (rc == 0)
            *id = e->id;
        else
            snprintf(why, whylen, "the token is not valid (unknown, expired or revoked)");
        k->st.cache_hits++;
        if (rc)
            k->st.rejected++;
        pthread_mutex_unlock(&k->mu);
        return rc;
    }
    if (e)
        cache_drop(k, (size_t)(e - k->ring));
    /* a slot among max_validations, waiting up to timeout_ms */
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += k->cfg->timeout_ms / 1000;
    dl.tv_nsec += (long)(k->cfg->timeout_ms % 1000) * 1000000L;
    if (dl.tv_nsec >= 1000000000L)
        dl.tv_sec++, dl.tv_nsec -= 1000000000L;
    while (k->inflight >= k->cfg->max_validations)
        if (pthread_cond_timedwait(&k->slot_free, &k->mu, &dl) == ETIMEDOUT &&
            k->inflight >= k->cfg->max_validations) {
            k->st.errors++;
            pthread_mutex_unlock(&k->mu);
            snprintf(why, whylen, "http.keystone.max_validations (%d) token validations are "
                     "running; none ended within http.keystone.timeout_ms (%d)",
                     k->cfg->max_validations, k->cfg->timeout_ms);
            return 503;
        }
    k->inflight++;
    pthread_mutex_unlock(&k->mu);

    int64_t expires = 0;
    struct auth_keystone_ident got;
    int rc = ask_keystone(k, token, &got, &expires, why, whylen);

    pthread_mutex_lock(&k->mu);
    k->inflight--;
    pthread_cond_signal(&k->slot_free);
    now = now_s();
    int64_t ttl = k->cfg->token_cache_s;
    if (rc == 0 && expires <= now) {
        rc = 401;                              /* valid by Keystone's clock, not ours */
        snprintf(why, whylen, "the token is expired");
    }
    if (rc == 0) {
        *id = got;
        if (ttl > 0)
            cache_put(k, d, ACCEPTED, expires < now + ttl ? expires : now + ttl, &got);
    } else if (rc == 401) {
        k->st.rejected++;
        if (ttl > 0)
            cache_put(k, d, REFUSED, now + (ttl < NEGATIVE_S ? ttl : NEGATIVE_S), NULL);
    } else {
        k->st.errors++;
    }
    uint64_t sup = 0;
    int log_err = rc == 503 && ga_ratelimit_ok(&k->err_log, &sup);
    pthread_mutex_unlock(&k->mu);
    if (log_err)
        ga_log(GA_LOG_WARN, "keystone_error", "token_sha256=%s reason=\"%s\" suppressed=%llu",
               tag, why, (unsigned long long)sup);
    else if (rc == 401)
        ga_log(GA_LOG_DEBUG, "keystone_rejected", "token_sha256=%s", tag);
    return rc;
}

/* ---- life ------------------------------------------------------------------- */

static int read_password(const char *path, char **out, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return ga_fail(GA_ECONFIG, err, errlen, "http.keystone.password_file %s: cannot open: %s",
                       path, strerror(errno));
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    int over = !feof(f);
    fclose(f);
    buf[n] = '\0';
    buf[strcspn(buf, "\r\n")] = '\0';
    if (over)
        return ga_fail(GA_ECONFIG, err, errlen, "http.keystone.password_file %s: over %zu bytes",
                       path, sizeof buf - 1);
    if (!buf[0])
        return ga_fail(GA_ECONFIG, err, errlen, "http.keystone.password_file %s: the first line "
                       "is empty", path);
    *out = strdup(buf);
    memset(buf, 0, sizeof buf);
    return *out ? 0 : GA_ENOMEM;
}

int auth_keystone_create(struct auth_keystone **out, const struct ga_keystone_config *cfg,
                         char *err, size_t errlen)
{
    struct auth_keystone *k = calloc(1, sizeof *k);
    if (!k)
        return GA_ENOMEM;
    k->cfg = cfg;
    int rc = cfg->password_file[0] ? read_password(cfg->password_file, &k->password, err, errlen)
                                   : ((k->password = strdup(cfg->password)) ? 0 : GA_ENOMEM);
    if (rc < 0) {
        free(k);
        return rc;
    }
    CURLcode init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (init_rc != CURLE_OK) {
        free(k->password);
        free(k);
        return ga_fail(GA_EIO, err, errlen, "libcurl: %s", curl_easy_strerror(init_rc));
    }
    size_t n = strlen(cfg->auth_url);
    while (n && cfg->auth_url[n - 1] == '/')
        n--;
    int v3 = n >= 3 && strncmp(cfg->auth_url + n - 3, "/v3", 3) == 0;
    snprintf(k->tokens_url, sizeof k->tokens_url, "%.*s%s/auth/tokens?nocatalog", (int)n,
             cfg->auth_url, v3 ? "" : "/v3");
    snprintf(k->challenge, sizeof k->challenge, "Keystone uri=\"%s\"",
             cfg->www_authenticate_uri[0] ? cfg->www_authenticate_uri : cfg->auth_url);
    pthread_mutex_init(&k->mu, NULL);
    pthread_mutex_init(&k->svc_mu, NULL);
    pthread_cond_init(&k->slot_free, NULL);
    k->err_log = (struct ga_ratelimit)GA_RATELIMIT_INIT(1000000000LL);
    ga_log(GA_LOG_INFO, "keystone_auth", "url=%s user=%s project=%s token_cache_s=%d "
           "cache_entries=%d timeout_ms=%d max_validations=%d", k->tokens_url, cfg->username,
           cfg->project_name, cfg->token_cache_s, cfg->cache_entries, cfg->timeout_ms,
           cfg->max_validations);
    *out = k;
    return 0;
}

void auth_keystone_free(struct auth_keystone *k)
{
    if (!k)
        return;
    ga_hmap_free(&k->map);
    free(k->ring);
    if (k->password) {
        memset(k->password, 0, strlen(k->password));
        free(k->password);
    }
    memset(k->svc_token, 0, sizeof k->svc_token);
    pthread_mutex_destroy(&k->mu);
    pthread_mutex_destroy(&k->svc_mu);
    pthread_cond_destroy(&k->slot_free);
    curl_global_cleanup();
    free(k);
}

const char *auth_keystone_challenge(const struct auth_keystone *k)
{
    return k->challenge;
}

void auth_keystone_get_stats(const struct auth_keystone *k, struct auth_keystone_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!k)
        return;
    struct auth_keystone *m = (struct auth_keystone *)k;
    pthread_mutex_lock(&m->mu);
    *out = m->st;
    out->cached = m->map.n;
    pthread_mutex_unlock(&m->mu);
}
