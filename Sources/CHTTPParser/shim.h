#ifndef PACKD_CHTTPPARSER_SHIM_H
#define PACKD_CHTTPPARSER_SHIM_H
#include <http_parser.h>

/* Bit-fields are not importable as settable properties in every Swift version; these read them. */
static inline unsigned int packd_http_parser_method(const http_parser *p) { return p->method; }
static inline unsigned int packd_http_parser_errno(const http_parser *p) { return p->http_errno; }
static inline unsigned int packd_http_parser_flags(const http_parser *p) { return p->flags; }
static inline unsigned int packd_http_parser_upgrade(const http_parser *p) { return p->upgrade; }
/* While a method is matched: how many of its characters have been. */
static inline unsigned int packd_http_parser_index(const http_parser *p) { return p->index; }
#endif
