#ifndef PACKD_CCURL_SHIM_H
#define PACKD_CCURL_SHIM_H
#include <curl/curl.h>

/* curl_easy_setopt, curl_multi_setopt and curl_easy_getinfo are variadic: Swift cannot call them.
   One typed wrapper per argument type keeps every call site checked by the compiler. */
static inline CURLcode packd_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode packd_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode packd_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode packd_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode packd_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode packd_easy_setopt_write_callback(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, cb); }
static inline CURLcode packd_easy_setopt_header_callback(CURL *h, size_t (*cb)(char *, size_t, size_t, void *)) { return curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, cb); }
static inline CURLcode packd_easy_setopt_opensocket_callback(CURL *h, curl_socket_t (*cb)(void *, curlsocktype, struct curl_sockaddr *)) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, cb); }
static inline CURLcode packd_easy_setopt_sockopt_callback(CURL *h, int (*cb)(void *, curl_socket_t, curlsocktype)) { return curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, cb); }
static inline CURLcode packd_easy_setopt_xferinfo_callback(CURL *h, int (*cb)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t)) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, cb); }

static inline CURLcode packd_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode packd_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode packd_easy_getinfo_double(CURL *h, CURLINFO i, double *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode packd_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode packd_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }

static inline CURLMcode packd_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode packd_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode packd_multi_setopt_socket_callback(CURLM *m, int (*cb)(CURL *, curl_socket_t, int, void *, void *)) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, cb); }
static inline CURLMcode packd_multi_setopt_timer_callback(CURLM *m, int (*cb)(CURLM *, long, void *)) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, cb); }
/* Whether libcurl takes `url` as a transfer will: the URL parser (curl_url_set, as packd's fetcher
   checks every request), then, for a host that is not ASCII, its IDN conversion to punycode, which
   a transfer does before resolving. CURLUE_OK when it does; else why not (an IDN host that cannot
   be converted is CURLUE_BAD_HOSTNAME). Client URLs are checked with it, so what libcurl would
   refuse mid-download is a 422 up front. */
static inline CURLUcode packd_curl_url_check(const char *url) {
    CURLU *handle = curl_url();
    if (!handle) return CURLUE_OUT_OF_MEMORY;
    CURLUcode code = curl_url_set(handle, CURLUPART_URL, url, 0);
    char *host = NULL;
    if (code == CURLUE_OK && curl_url_get(handle, CURLUPART_HOST, &host, 0) == CURLUE_OK && host) {
        int ascii = 1;
        for (const char *c = host; *c; c++) if ((unsigned char)*c >= 0x80) { ascii = 0; break; }
        if (!ascii) {
            char *converted = NULL;
            if (curl_url_get(handle, CURLUPART_HOST, &converted, CURLU_PUNYCODE) != CURLUE_OK) code = CURLUE_BAD_HOSTNAME;
            curl_free(converted);
        }
    }
    curl_free(host);
    curl_url_cleanup(handle);
    return code;
}
#endif
