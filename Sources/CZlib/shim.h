#ifndef PACKD_CZLIB_SHIM_H
#define PACKD_CZLIB_SHIM_H
#include <zlib.h>

/* deflateInit2/inflateInit2 are macros; Swift sees neither. */
static inline int packd_deflateInit2(z_streamp strm, int level, int method, int windowBits, int memLevel, int strategy) {
    return deflateInit2(strm, level, method, windowBits, memLevel, strategy);
}
static inline int packd_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
