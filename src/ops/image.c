// Image operators: ImageDecoder (opset 20) turns an encoded image into
// [height, width, channels] uint8 pixels as RGB, BGR or Grayscale.
//
// The format is recognised from its magic bytes. JPEG, PNG, TIFF, WebP
// and JPEG 2000 go through the system codec libraries (the ones Pillow,
// which produced the ONNX test data, uses), each present only when the
// build found it (WM_HAVE_<NAME>); BMP and PNM are simple enough to parse
// here. Every decoder first yields its native gray or RGB pixels; alpha is
// dropped, palettes expanded and deeper samples reduced to 8 bits. Gray
// from RGB uses Pillow's "L" conversion, (19595 R + 38470 G + 7471 B +
// 0x8000) >> 16, so results match the reference bit for bit.
//
// The libraries report fatal errors by longjmp out of their callbacks, so
// each call into libjpeg and libpng sits in a small function whose state
// lives in a job struct (nothing local is clobbered), and the caller
// cleans up. A corrupt or truncated stream is an error naming the format,
// never a crash and never a partial image.
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WM_HAVE_JPEG
#include <jerror.h>
#include <jpeglib.h>
#endif
#ifdef WM_HAVE_PNG
#include <png.h>
#endif
#ifdef WM_HAVE_TIFF
#include <tiffio.h>
#endif
#ifdef WM_HAVE_WEBP
#include <webp/decode.h>
#endif
#ifdef WM_HAVE_OPENJP2
#include <openjpeg.h>
#endif

#include "ops/ops.h"

enum pixel_format { PIXEL_RGB, PIXEL_BGR, PIXEL_GRAYSCALE };

enum image_format {
  FORMAT_UNKNOWN,
  FORMAT_BMP,
  FORMAT_JPEG,
  FORMAT_JPEG2000,
  FORMAT_PNG,
  FORMAT_PNM,
  FORMAT_TIFF,
  FORMAT_WEBP,
};

static const char *const format_names[] = {
    "unknown", "BMP", "JPEG", "JPEG 2000", "PNG", "PNM", "TIFF", "WebP",
};

// Decoded pixels in the decoder's native layout.
typedef struct image {
  int64_t height;    // rows
  int64_t width;     // columns
  int32_t channels;  // 1 (gray) or 3 (RGB)
  uint8_t *pixels;   // height * width * channels; NULL after a header read
} image_t;

// What one decode call works on.
typedef struct decode_args {
  const wm_op_ctx_t *ctx;  // the node, for messages
  const uint8_t *data;     // encoded stream
  size_t size;             // its bytes
  bool header_only;        // stop once the dimensions are known
} decode_args_t;

// An error about the stream, prefixed with its format.
static wm_status_t image_error(const decode_args_t *a, enum image_format f,
                               wm_status_code_t code, const char *fmt, ...)
    WM_PRINTF(4, 5);

static wm_status_t image_error(const decode_args_t *a, enum image_format f,
                               wm_status_code_t code, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return wm_op_error(a->ctx, code, "%s image: %s", format_names[f], msg);
}

// Pillow refuses images above twice its MAX_IMAGE_PIXELS as decompression
// bombs; the same bound keeps a few header bytes from claiming gigabytes.
#define MAX_PIXELS ((int64_t)2 * 89478485)

// Sets the dimensions of |img| after checking them; allocates its pixels
// unless only the header is wanted.
static wm_status_t image_init(const decode_args_t *a, enum image_format f,
                              int64_t height, int64_t width, int32_t channels,
                              image_t *img) {
  if (height < 1 || width < 1) {
    return image_error(a, f, WM_STATUS_DATA_LOSS,
                       "invalid dimensions %lld x %lld", (long long)width,
                       (long long)height);
  }
  if (height > MAX_PIXELS || width > MAX_PIXELS / height) {
    return image_error(a, f, WM_STATUS_RESOURCE_EXHAUSTED,
                       "%lld x %lld pixels exceed the limit of %lld",
                       (long long)width, (long long)height,
                       (long long)MAX_PIXELS);
  }
  size_t n = (size_t)height * (size_t)width * (size_t)channels;
  img->height = height;
  img->width = width;
  img->channels = channels;
  img->pixels = NULL;
  if (a->header_only) {
    return NULL;
  }
  img->pixels = wm_malloc(n);
  if (!img->pixels) {
    return image_error(a, f, WM_STATUS_RESOURCE_EXHAUSTED,
                       "out of memory for %lld x %lld pixels", (long long)width,
                       (long long)height);
  }
  return NULL;
}

static void image_deinit(image_t *img) {
  free(img->pixels);
  img->pixels = NULL;
}

// Pillow's RGB to "L" conversion (ITU-R 601-2 luma, rounded).
static uint8_t luma(const uint8_t *rgb) {
  return (uint8_t)(((uint32_t)rgb[0] * 19595 + (uint32_t)rgb[1] * 38470 +
                    (uint32_t)rgb[2] * 7471 + 0x8000) >>
                   16);
}

// Reduces |v| with maximum |maxval| to 0..255, rounding.
static uint8_t scale_to_8bit(uint32_t v, uint32_t maxval) {
  if (maxval == 255) {
    return (uint8_t)v;
  }
  return (uint8_t)(((uint64_t)v * 255 + maxval / 2) / maxval);
}

static enum image_format detect_format(const uint8_t *d, size_t n) {
  static const uint8_t png_magic[8] = {0x89, 'P',  'N',  'G',
                                       '\r', '\n', 0x1A, '\n'};
  static const uint8_t jp2_magic[12] = {0,   0,   0,    12,   'j',  'P',
                                        ' ', ' ', '\r', '\n', 0x87, '\n'};
  static const uint8_t j2k_magic[4] = {0xFF, 0x4F, 0xFF, 0x51};
  if (n >= 3 && d[0] == 0xFF && d[1] == 0xD8 && d[2] == 0xFF) {
    return FORMAT_JPEG;
  }
  if (n >= 8 && memcmp(d, png_magic, 8) == 0) {
    return FORMAT_PNG;
  }
  if (n >= 2 && d[0] == 'B' && d[1] == 'M') {
    return FORMAT_BMP;
  }
  if (n >= 4 && (memcmp(d, "II*\0", 4) == 0 || memcmp(d, "MM\0*", 4) == 0)) {
    return FORMAT_TIFF;
  }
  if (n >= 12 && memcmp(d, "RIFF", 4) == 0 && memcmp(d + 8, "WEBP", 4) == 0) {
    return FORMAT_WEBP;
  }
  if ((n >= 12 && memcmp(d, jp2_magic, 12) == 0) ||
      (n >= 4 && memcmp(d, j2k_magic, 4) == 0)) {
    return FORMAT_JPEG2000;
  }
  if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6') {
    return FORMAT_PNM;
  }
  return FORMAT_UNKNOWN;
}

// ------------------------------------------------------------------- BMP

static uint32_t get_u16le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

static uint32_t get_u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

// A channel of a packed pixel: its mask's shift and width in bits.
typedef struct bit_field {
  uint32_t shift;  // position of the lowest mask bit
  uint32_t bits;   // number of mask bits
} bit_field_t;

static bit_field_t bit_field_of(uint32_t mask) {
  bit_field_t f = {0, 0};
  if (mask == 0) {
    return f;
  }
  while (!(mask & 1)) {
    mask >>= 1;
    f.shift++;
  }
  while (mask & 1) {
    mask >>= 1;
    f.bits++;
  }
  return f;
}

// Widens or narrows the field |f| of |px| to 8 bits; narrower fields
// repeat their bits (5-bit 31 becomes 255), as Pillow's unpackers do.
static uint8_t bit_field_get(bit_field_t f, uint32_t px) {
  if (f.bits == 0) {
    return 0;
  }
  uint32_t v =
      (px >> f.shift) & (f.bits >= 32 ? 0xFFFFFFFFu : (1u << f.bits) - 1);
  if (f.bits >= 8) {
    return (uint8_t)(v >> (f.bits - 8));
  }
  uint32_t out = 0, have = 0;
  while (have < 8) {
    out = out << f.bits | v;
    have += f.bits;
  }
  return (uint8_t)(out >> (have - 8));
}

// The parsed headers of a BMP file.
typedef struct bmp_info {
  int64_t width;          // columns
  int64_t height;         // rows
  bool top_down;          // rows stored from the top
  uint32_t bpp;           // bits per pixel
  uint32_t compression;   // BI_RGB (0) or BI_BITFIELDS (3)
  size_t palette_at;      // offset of the palette
  uint32_t palette_size;  // palette entries
  uint32_t entry_bytes;   // 4, or 3 with the OS/2 core header
  bit_field_t field[3];   // red, green, blue of 16- and 32-bit pixels
  size_t pixels_at;       // offset of the pixel rows
  size_t stride;          // bytes per row, padded to 4
} bmp_info_t;

static wm_status_t bmp_parse(const decode_args_t *a, bmp_info_t *b) {
  const uint8_t *d = a->data;
  size_t n = a->size;
  memset(b, 0, sizeof(*b));
  if (n < 18) {
    return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                       "truncated file header (%zu bytes)", n);
  }
  uint32_t header = get_u32le(d + 14);
  b->pixels_at = get_u32le(d + 10);
  uint32_t colors_used = 0;
  if (header == 12) {  // OS/2 BITMAPCOREHEADER: 16-bit unsigned dims
    if (n < 26) {
      return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                         "truncated core header");
    }
    b->width = get_u16le(d + 18);
    b->height = get_u16le(d + 20);
    b->bpp = get_u16le(d + 24);
    b->entry_bytes = 3;
  } else if (header == 40 || header == 52 || header == 56 || header == 108 ||
             header == 124) {
    if (n < 14 + (size_t)header) {
      return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                         "truncated %u-byte info header", header);
    }
    b->width = (int32_t)get_u32le(d + 18);
    int64_t h = (int32_t)get_u32le(d + 22);
    b->top_down = h < 0;
    b->height = h < 0 ? -h : h;
    b->bpp = get_u16le(d + 28);
    b->compression = get_u32le(d + 30);
    colors_used = get_u32le(d + 46);
    b->entry_bytes = 4;
  } else {
    return image_error(a, FORMAT_BMP, WM_STATUS_UNIMPLEMENTED,
                       "info header of %u bytes is not supported", header);
  }
  if (b->width < 1 || b->height < 1) {
    return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                       "invalid dimensions %lld x %lld", (long long)b->width,
                       (long long)b->height);
  }
  uint32_t bpp = b->bpp;
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32) {
    return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                       "invalid bit depth %u", bpp);
  }
  if (b->compression == 1 || b->compression == 2) {
    return image_error(a, FORMAT_BMP, WM_STATUS_UNIMPLEMENTED,
                       "run-length encoded pixels are not supported");
  }
  if (b->compression != 0 &&
      !(b->compression == 3 && (bpp == 16 || bpp == 32))) {
    return image_error(a, FORMAT_BMP, WM_STATUS_UNIMPLEMENTED,
                       "compression %u with %u bits per pixel is not supported",
                       b->compression, bpp);
  }
  uint32_t masks[3] = {0x00FF0000u, 0x0000FF00u, 0x000000FFu};
  if (bpp == 16) {  // 5-5-5
    masks[0] = 0x7C00;
    masks[1] = 0x03E0;
    masks[2] = 0x001F;
  }
  if (b->compression == 3) {
    // The masks follow a 40-byte header and sit inside the longer ones,
    // at the same offset either way.
    if (n < 66) {
      return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                         "truncated bit-field masks");
    }
    for (int i = 0; i < 3; i++) {
      masks[i] = get_u32le(d + 54 + 4 * i);
    }
  }
  for (int i = 0; i < 3; i++) {
    b->field[i] = bit_field_of(masks[i]);
  }
  b->palette_at = 14 + (size_t)header;
  if (bpp <= 8) {
    uint32_t max = 1u << bpp;
    b->palette_size = colors_used ? colors_used : max;
    if (b->palette_size > max) {
      return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                         "%u palette entries for %u bits per pixel",
                         b->palette_size, bpp);
    }
    if ((n - b->palette_at) / b->entry_bytes < b->palette_size) {
      return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                         "truncated palette of %u entries", b->palette_size);
    }
  }
  // width < 2^31 and bpp <= 32: the row size fits in 64 bits.
  b->stride = (size_t)(((uint64_t)b->width * bpp + 31) / 32 * 4);
  size_t rows;
  if (!wm_checked_mul(b->stride, (size_t)b->height, &rows) ||
      b->pixels_at > n || n - b->pixels_at < rows) {
    return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                       "pixel data truncated: %lld rows of %zu bytes from "
                       "offset %zu in %zu bytes",
                       (long long)b->height, b->stride, b->pixels_at, n);
  }
  return NULL;
}

static wm_status_t decode_bmp(const decode_args_t *a, image_t *img) {
  bmp_info_t b;
  WM_RETURN_IF_ERROR(bmp_parse(a, &b));
  WM_RETURN_IF_ERROR(image_init(a, FORMAT_BMP, b.height, b.width, 3, img));
  if (a->header_only) {
    return NULL;
  }
  const uint8_t *pal = a->data + b.palette_at;
  for (int64_t y = 0; y < b.height; y++) {
    int64_t file_row = b.top_down ? y : b.height - 1 - y;
    const uint8_t *row = a->data + b.pixels_at + (size_t)file_row * b.stride;
    uint8_t *out = img->pixels + (size_t)y * (size_t)b.width * 3;
    for (int64_t x = 0; x < b.width; x++, out += 3) {
      if (b.bpp <= 8) {
        uint64_t bit = (uint64_t)x * b.bpp;
        uint32_t shift = 8 - b.bpp - (uint32_t)(bit % 8);
        uint32_t idx = (row[bit / 8] >> shift) & ((1u << b.bpp) - 1);
        if (idx >= b.palette_size) {
          image_deinit(img);
          return image_error(a, FORMAT_BMP, WM_STATUS_DATA_LOSS,
                             "pixel (%lld, %lld) uses entry %u of a %u-entry "
                             "palette",
                             (long long)x, (long long)y, idx, b.palette_size);
        }
        const uint8_t *e = pal + (size_t)idx * b.entry_bytes;
        out[0] = e[2];
        out[1] = e[1];
        out[2] = e[0];
      } else if (b.bpp == 24) {
        const uint8_t *p = row + (size_t)x * 3;
        out[0] = p[2];
        out[1] = p[1];
        out[2] = p[0];
      } else {
        uint32_t px = b.bpp == 16 ? get_u16le(row + (size_t)x * 2)
                                  : get_u32le(row + (size_t)x * 4);
        for (int c = 0; c < 3; c++) {
          out[c] = bit_field_get(b.field[c], px);
        }
      }
    }
  }
  return NULL;
}

// ------------------------------------------------------------------- PNM

// A cursor over a PNM header or plain (ASCII) raster.
typedef struct pnm_reader {
  const uint8_t *data;  // the stream
  size_t size;          // its bytes
  size_t pos;           // next byte
} pnm_reader_t;

static bool pnm_is_space(uint8_t c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

// Skips whitespace and '#' comments (which run to the end of the line).
static void pnm_skip(pnm_reader_t *r) {
  while (r->pos < r->size) {
    uint8_t c = r->data[r->pos];
    if (c == '#') {
      while (r->pos < r->size && r->data[r->pos] != '\n' &&
             r->data[r->pos] != '\r') {
        r->pos++;
      }
    } else if (pnm_is_space(c)) {
      r->pos++;
    } else {
      return;
    }
  }
}

// Reads a decimal number no larger than |max|; false when there is none
// or it is too large.
static bool pnm_uint(pnm_reader_t *r, uint32_t max, uint32_t *out) {
  pnm_skip(r);
  uint64_t v = 0;
  size_t start = r->pos;
  while (r->pos < r->size && r->data[r->pos] >= '0' && r->data[r->pos] <= '9') {
    v = v * 10 + (uint64_t)(r->data[r->pos] - '0');
    if (v > max) {
      return false;
    }
    r->pos++;
  }
  *out = (uint32_t)v;
  return r->pos > start;
}

static wm_status_t decode_pnm(const decode_args_t *a, image_t *img) {
  pnm_reader_t r = {a->data, a->size, 2};
  int kind = a->data[1] - '0';  // 1..6
  bool bitmap = kind == 1 || kind == 4, plain = kind <= 3;
  int32_t channels = kind == 3 || kind == 6 ? 3 : 1;
  uint32_t width, height, maxval = 1;
  if (!pnm_uint(&r, INT32_MAX, &width) || !pnm_uint(&r, INT32_MAX, &height) ||
      (!bitmap && !pnm_uint(&r, 65535, &maxval))) {
    return image_error(a, FORMAT_PNM, WM_STATUS_DATA_LOSS,
                       "malformed P%d header", kind);
  }
  if (maxval == 0) {
    return image_error(a, FORMAT_PNM, WM_STATUS_DATA_LOSS, "maxval is 0");
  }
  WM_RETURN_IF_ERROR(image_init(a, FORMAT_PNM, height, width, channels, img));
  if (a->header_only) {
    return NULL;
  }
  size_t count = (size_t)height * width * (size_t)channels;
  uint8_t *out = img->pixels;
  if (plain) {
    for (size_t i = 0; i < count; i++) {
      uint32_t v;
      if (bitmap) {
        // Plain PBM digits need no separators.
        pnm_skip(&r);
        if (r.pos >= r.size || (r.data[r.pos] != '0' && r.data[r.pos] != '1')) {
          goto truncated;
        }
        out[i] = r.data[r.pos++] == '1' ? 0 : 255;
        continue;
      }
      if (!pnm_uint(&r, UINT32_MAX, &v)) {
        goto truncated;
      }
      if (v > maxval) {
        image_deinit(img);
        return image_error(a, FORMAT_PNM, WM_STATUS_DATA_LOSS,
                           "sample %u exceeds maxval %u", v, maxval);
      }
      out[i] = scale_to_8bit(v, maxval);
    }
    return NULL;
  }
  // One whitespace byte ends the header of the raw formats.
  if (r.pos >= r.size || !pnm_is_space(r.data[r.pos])) {
    goto truncated;
  }
  r.pos++;
  const uint8_t *p = r.data + r.pos;
  size_t avail = r.size - r.pos;
  if (bitmap) {
    size_t row_bytes = ((size_t)width + 7) / 8;
    if (avail / row_bytes < height) {
      goto truncated;
    }
    for (size_t y = 0; y < height; y++) {
      for (size_t x = 0; x < width; x++) {
        uint8_t bit = (p[y * row_bytes + x / 8] >> (7 - x % 8)) & 1;
        out[y * width + x] = bit ? 0 : 255;
      }
    }
    return NULL;
  }
  size_t sample_bytes = maxval < 256 ? 1 : 2;
  if (avail / sample_bytes < count) {
    goto truncated;
  }
  for (size_t i = 0; i < count; i++) {
    uint32_t v =
        sample_bytes == 1 ? p[i] : (uint32_t)p[2 * i] << 8 | p[2 * i + 1];
    if (v > maxval) {
      image_deinit(img);
      return image_error(a, FORMAT_PNM, WM_STATUS_DATA_LOSS,
                         "sample %u exceeds maxval %u", v, maxval);
    }
    out[i] = scale_to_8bit(v, maxval);
  }
  return NULL;
truncated:
  image_deinit(img);
  return image_error(a, FORMAT_PNM, WM_STATUS_DATA_LOSS,
                     "P%d raster truncated or malformed for %u x %u", kind,
                     width, height);
}

// ------------------------------------------------------------------ JPEG

#ifdef WM_HAVE_JPEG

// libjpeg's error manager extended with a way back to our code.
typedef struct jpeg_guard {
  struct jpeg_error_mgr mgr;      // first, so libjpeg's pointer casts back
  jmp_buf jump;                   // where a fatal error lands
  char message[JMSG_LENGTH_MAX];  // text of that error
} jpeg_guard_t;

// Everything the guarded decode touches, so that nothing lives in locals
// across setjmp.
typedef struct jpeg_job {
  struct jpeg_decompress_struct cinfo;  // the decoder
  jpeg_guard_t guard;                   // its error manager
  const decode_args_t *args;            // the stream
  image_t *img;                         // the result
  wm_status_t status;                   // an error found outside libjpeg
} jpeg_job_t;

static void jpeg_on_error(j_common_ptr c) {
  jpeg_guard_t *g = (jpeg_guard_t *)c->err;
  c->err->format_message(c, g->message);
  longjmp(g->jump, 1);
}

// libjpeg only warns about a truncated or corrupt entropy-coded segment
// and pads the image with gray; that is a failure here.
static void jpeg_on_message(j_common_ptr c, int level) {
  if (level >= 0) {
    return;
  }
  int code = c->err->msg_code;
  if (code == JWRN_JPEG_EOF || code == JWRN_HIT_MARKER ||
      code == JWRN_HUFF_BAD_CODE || code == JWRN_MUST_RESYNC ||
      code == JWRN_NOT_SEQUENTIAL) {
    jpeg_on_error(c);
  }
}

static void jpeg_silent(j_common_ptr c) {
  (void)c;
}

// Runs libjpeg; false when it failed (message in the guard, or status).
static bool jpeg_guarded(jpeg_job_t *j) {
  if (setjmp(j->guard.jump)) {
    return false;
  }
  struct jpeg_decompress_struct *ci = &j->cinfo;
  jpeg_create_decompress(ci);
  jpeg_mem_src(ci, (unsigned char *)j->args->data,
               (unsigned long)j->args->size);
  jpeg_read_header(ci, TRUE);
  int32_t channels = 3;
  if (ci->jpeg_color_space == JCS_GRAYSCALE) {
    ci->out_color_space = JCS_GRAYSCALE;
    channels = 1;
  } else if (ci->jpeg_color_space == JCS_CMYK ||
             ci->jpeg_color_space == JCS_YCCK) {
    j->status = image_error(j->args, FORMAT_JPEG, WM_STATUS_UNIMPLEMENTED,
                            "CMYK images are not supported");
    return false;
  } else {
    ci->out_color_space = JCS_RGB;
  }
  j->status = image_init(j->args, FORMAT_JPEG, ci->image_height,
                         ci->image_width, channels, j->img);
  if (j->status || j->args->header_only) {
    return !j->status;
  }
  jpeg_start_decompress(ci);
  if (ci->output_components != channels ||
      ci->output_width != ci->image_width ||
      ci->output_height != ci->image_height) {
    strcpy(j->guard.message, "decoder output does not match the header");
    return false;
  }
  size_t stride = (size_t)ci->output_width * (size_t)channels;
  while (ci->output_scanline < ci->output_height) {
    JSAMPROW row = j->img->pixels + (size_t)ci->output_scanline * stride;
    if (jpeg_read_scanlines(ci, &row, 1) != 1) {
      strcpy(j->guard.message, "stream ended early");
      return false;
    }
  }
  jpeg_finish_decompress(ci);
  return true;
}

static wm_status_t decode_jpeg(const decode_args_t *a, image_t *img) {
  if (a->size > ULONG_MAX) {
    return image_error(a, FORMAT_JPEG, WM_STATUS_UNIMPLEMENTED,
                       "stream of %zu bytes is too large", a->size);
  }
  jpeg_job_t *j = wm_calloc(1, sizeof(*j));
  if (!j) {
    return image_error(a, FORMAT_JPEG, WM_STATUS_RESOURCE_EXHAUSTED,
                       "out of memory");
  }
  j->cinfo.err = jpeg_std_error(&j->guard.mgr);
  j->guard.mgr.error_exit = jpeg_on_error;
  j->guard.mgr.emit_message = jpeg_on_message;
  j->guard.mgr.output_message = jpeg_silent;
  j->args = a;
  j->img = img;
  img->pixels = NULL;
  bool ok = jpeg_guarded(j);
  jpeg_destroy_decompress(&j->cinfo);
  wm_status_t st = j->status;
  if (!ok && !st) {
    st = image_error(a, FORMAT_JPEG, WM_STATUS_DATA_LOSS, "%s",
                     j->guard.message);
  }
  free(j);
  if (st) {
    image_deinit(img);
  }
  return st;
}

#endif  // WM_HAVE_JPEG

// ------------------------------------------------------------------- PNG

#ifdef WM_HAVE_PNG

// State of one guarded libpng decode.
typedef struct png_job {
  png_structp png;            // the decoder
  png_infop info;             // its header
  const decode_args_t *args;  // the stream
  size_t pos;                 // bytes consumed
  image_t *img;               // the result
  png_bytep *rows;            // row pointers into img->pixels
  wm_status_t status;         // an error found outside libpng
  char message[256];          // libpng's error text
} png_job_t;

static void png_on_error(png_structp png, png_const_charp msg) {
  png_job_t *j = png_get_error_ptr(png);
  snprintf(j->message, sizeof(j->message), "%s", msg);
  png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg;
}

static void png_read_memory(png_structp png, png_bytep out, size_t n) {
  png_job_t *j = png_get_io_ptr(png);
  if (n > j->args->size - j->pos) {
    png_error(png, "stream ended early");
  }
  memcpy(out, j->args->data + j->pos, n);
  j->pos += n;
}

static bool png_guarded(png_job_t *j) {
  if (setjmp(png_jmpbuf(j->png))) {
    return false;
  }
  png_set_read_fn(j->png, j, png_read_memory);
  png_read_info(j->png, j->info);
  int64_t width = png_get_image_width(j->png, j->info);
  int64_t height = png_get_image_height(j->png, j->info);
  int color = png_get_color_type(j->png, j->info);
  int32_t channels = color & PNG_COLOR_MASK_COLOR ? 3 : 1;
  j->status = image_init(j->args, FORMAT_PNG, height, width, channels, j->img);
  if (j->status || j->args->header_only) {
    return !j->status;
  }
  // Palettes and low bit depths to 8-bit gray or RGB; 16-bit samples keep
  // their high byte; alpha (including tRNS) is dropped.
  png_set_expand(j->png);
  png_set_strip_16(j->png);
  png_set_strip_alpha(j->png);
  png_set_interlace_handling(j->png);
  png_read_update_info(j->png, j->info);
  size_t stride = (size_t)width * (size_t)channels;
  if (png_get_channels(j->png, j->info) != channels ||
      png_get_rowbytes(j->png, j->info) != stride) {
    snprintf(j->message, sizeof(j->message),
             "unexpected row layout after conversion");
    return false;
  }
  j->rows = wm_calloc((size_t)height, sizeof(png_bytep));
  if (!j->rows) {
    j->status = image_error(j->args, FORMAT_PNG, WM_STATUS_RESOURCE_EXHAUSTED,
                            "out of memory");
    return false;
  }
  for (int64_t y = 0; y < height; y++) {
    j->rows[y] = j->img->pixels + (size_t)y * stride;
  }
  png_read_image(j->png, j->rows);
  png_read_end(j->png, NULL);
  return true;
}

static wm_status_t decode_png(const decode_args_t *a, image_t *img) {
  png_job_t *j = wm_calloc(1, sizeof(*j));
  if (!j) {
    return image_error(a, FORMAT_PNG, WM_STATUS_RESOURCE_EXHAUSTED,
                       "out of memory");
  }
  j->args = a;
  j->img = img;
  img->pixels = NULL;
  j->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, j, png_on_error,
                                  png_on_warning);
  j->info = j->png ? png_create_info_struct(j->png) : NULL;
  bool ok = j->info && png_guarded(j);
  wm_status_t st = j->status;
  if (!ok && !st) {
    st = image_error(
        a, FORMAT_PNG,
        j->info ? WM_STATUS_DATA_LOSS : WM_STATUS_RESOURCE_EXHAUSTED, "%s",
        j->info ? j->message : "cannot create a decoder");
  }
  png_destroy_read_struct(j->png ? &j->png : NULL, j->info ? &j->info : NULL,
                          NULL);
  free(j->rows);
  free(j);
  if (st) {
    image_deinit(img);
  }
  return st;
}

#endif  // WM_HAVE_PNG

// ------------------------------------------------------------------ TIFF

#ifdef WM_HAVE_TIFF

// The stream libtiff reads through its client procedures.
typedef struct tiff_job {
  const decode_args_t *args;  // the stream
  uint64_t pos;               // read position (may pass the end)
  char message[256];          // first error libtiff reported
} tiff_job_t;

static tmsize_t tiff_read(thandle_t h, void *buf, tmsize_t n) {
  tiff_job_t *j = (tiff_job_t *)h;
  if (n < 0) {
    return -1;
  }
  uint64_t size = j->args->size;
  uint64_t avail = j->pos < size ? size - j->pos : 0;
  uint64_t take = (uint64_t)n < avail ? (uint64_t)n : avail;
  if (take == 0) {
    return 0;
  }
  memcpy(buf, j->args->data + j->pos, (size_t)take);
  j->pos += take;
  return (tmsize_t)take;
}

static tmsize_t tiff_write(thandle_t h, void *buf, tmsize_t n) {
  (void)h;
  (void)buf;
  (void)n;
  return -1;
}

static toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  tiff_job_t *j = (tiff_job_t *)h;
  uint64_t base = whence == SEEK_SET   ? 0
                  : whence == SEEK_CUR ? j->pos
                  : whence == SEEK_END ? j->args->size
                                       : UINT64_MAX;
  if (base == UINT64_MAX || off > UINT64_MAX / 2 - base) {
    return (toff_t)-1;
  }
  j->pos = base + off;
  return j->pos;
}

static int tiff_close(thandle_t h) {
  (void)h;
  return 0;
}

static toff_t tiff_size(thandle_t h) {
  return ((tiff_job_t *)h)->args->size;
}

static int tiff_map(thandle_t h, void **base, toff_t *size) {
  (void)h;
  (void)base;
  (void)size;
  return 0;
}

static void tiff_unmap(thandle_t h, void *base, toff_t size) {
  (void)h;
  (void)base;
  (void)size;
}

static int tiff_on_error(TIFF *tif, void *user, const char *module,
                         const char *fmt, va_list ap) {
  (void)tif;
  (void)module;
  tiff_job_t *j = user;
  if (!j->message[0]) {
    vsnprintf(j->message, sizeof(j->message), fmt, ap);
  }
  return 1;  // handled: libtiff's global handler stays quiet
}

static int tiff_on_warning(TIFF *tif, void *user, const char *module,
                           const char *fmt, va_list ap) {
  (void)tif;
  (void)user;
  (void)module;
  (void)fmt;
  (void)ap;
  return 1;
}

// Reads 8-bit contiguous gray or RGB strips as stored, extra samples
// (alpha) skipped; true when the layout is that simple.
static bool tiff_is_plain(TIFF *tif, int32_t *out_channels,
                          uint16_t *out_samples) {
  uint16_t bits = 0, samples = 0, planar = 0, photometric = 0;
  if (!TIFFGetFieldDefaulted(tif, TIFFTAG_BITSPERSAMPLE, &bits) ||
      !TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &samples) ||
      !TIFFGetFieldDefaulted(tif, TIFFTAG_PLANARCONFIG, &planar) ||
      !TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric)) {
    return false;
  }
  if (bits != 8 || planar != PLANARCONFIG_CONTIG || TIFFIsTiled(tif)) {
    return false;
  }
  *out_samples = samples;
  if (photometric == PHOTOMETRIC_RGB && samples >= 3) {
    *out_channels = 3;
    return true;
  }
  if (photometric == PHOTOMETRIC_MINISBLACK && samples >= 1) {
    *out_channels = 1;
    return true;
  }
  return false;
}

static wm_status_t tiff_pixels(const decode_args_t *a, TIFF *tif, tiff_job_t *j,
                               image_t *img) {
  int32_t channels = 3;
  uint16_t samples = 0;
  bool plain = tiff_is_plain(tif, &channels, &samples);
  uint32_t width = 0, height = 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
  WM_RETURN_IF_ERROR(image_init(a, FORMAT_TIFF, height, width, channels, img));
  if (a->header_only) {
    return NULL;
  }
  if (plain) {
    tmsize_t line = TIFFScanlineSize(tif);
    if (line < 0 || (uint64_t)line < (uint64_t)width * samples) {
      return image_error(a, FORMAT_TIFF, WM_STATUS_DATA_LOSS,
                         "scanline of %lld bytes for %u samples",
                         (long long)line, width * samples);
    }
    uint8_t *buf = wm_malloc((size_t)line);
    if (!buf) {
      return image_error(a, FORMAT_TIFF, WM_STATUS_RESOURCE_EXHAUSTED,
                         "out of memory");
    }
    for (uint32_t y = 0; y < height; y++) {
      if (TIFFReadScanline(tif, buf, y, 0) < 0) {
        free(buf);
        return image_error(a, FORMAT_TIFF, WM_STATUS_DATA_LOSS, "row %u: %s", y,
                           j->message[0] ? j->message : "unreadable");
      }
      uint8_t *out = img->pixels + (size_t)y * width * (size_t)channels;
      for (uint32_t x = 0; x < width; x++) {
        memcpy(out + (size_t)x * (size_t)channels, buf + (size_t)x * samples,
               (size_t)channels);
      }
    }
    free(buf);
    return NULL;
  }
  // Everything else (palettes, YCbCr, CMYK, other depths, tiles) goes
  // through libtiff's RGBA conversion.
  char why[1024];
  if (!TIFFRGBAImageOK(tif, why)) {
    return image_error(a, FORMAT_TIFF, WM_STATUS_UNIMPLEMENTED, "%s", why);
  }
  size_t n;
  uint32_t *raster = NULL;
  if (wm_checked_mul((size_t)width * height, sizeof(uint32_t), &n)) {
    raster = wm_malloc(n);
  }
  if (!raster) {
    return image_error(a, FORMAT_TIFF, WM_STATUS_RESOURCE_EXHAUSTED,
                       "out of memory");
  }
  if (!TIFFReadRGBAImageOriented(tif, width, height, raster,
                                 ORIENTATION_TOPLEFT, 1)) {
    free(raster);
    return image_error(a, FORMAT_TIFF, WM_STATUS_DATA_LOSS, "%s",
                       j->message[0] ? j->message : "unreadable pixels");
  }
  for (size_t i = 0; i < (size_t)width * height; i++) {
    img->pixels[3 * i] = (uint8_t)TIFFGetR(raster[i]);
    img->pixels[3 * i + 1] = (uint8_t)TIFFGetG(raster[i]);
    img->pixels[3 * i + 2] = (uint8_t)TIFFGetB(raster[i]);
  }
  free(raster);
  return NULL;
}

static wm_status_t decode_tiff(const decode_args_t *a, image_t *img) {
  tiff_job_t j;
  memset(&j, 0, sizeof(j));
  j.args = a;
  img->pixels = NULL;
  TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
  if (!opts) {
    return image_error(a, FORMAT_TIFF, WM_STATUS_RESOURCE_EXHAUSTED,
                       "out of memory");
  }
  TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_on_error, &j);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_on_warning, &j);
  // "m": never map the caller's bytes; libtiff reads through tiff_read.
  TIFF *tif = TIFFClientOpenExt("encoded_stream", "rm", (thandle_t)&j,
                                tiff_read, tiff_write, tiff_seek, tiff_close,
                                tiff_size, tiff_map, tiff_unmap, opts);
  TIFFOpenOptionsFree(opts);
  if (!tif) {
    return image_error(a, FORMAT_TIFF, WM_STATUS_DATA_LOSS, "%s",
                       j.message[0] ? j.message : "cannot open");
  }
  wm_status_t st = tiff_pixels(a, tif, &j, img);
  TIFFClose(tif);
  if (st) {
    image_deinit(img);
  }
  return st;
}

#endif  // WM_HAVE_TIFF

// ------------------------------------------------------------------ WebP

#ifdef WM_HAVE_WEBP

static const char *webp_status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OK:
      return "ok";
    case VP8_STATUS_OUT_OF_MEMORY:
      return "out of memory";
    case VP8_STATUS_INVALID_PARAM:
      return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR:
      return "corrupt bitstream";
    case VP8_STATUS_UNSUPPORTED_FEATURE:
      return "unsupported feature";
    case VP8_STATUS_SUSPENDED:
      return "suspended";
    case VP8_STATUS_USER_ABORT:
      return "aborted";
    case VP8_STATUS_NOT_ENOUGH_DATA:
      return "stream ended early";
  }
  return "unknown error";
}

static wm_status_t decode_webp(const decode_args_t *a, image_t *img) {
  WebPDecoderConfig config;
  img->pixels = NULL;
  if (!WebPInitDecoderConfig(&config)) {
    return image_error(a, FORMAT_WEBP, WM_STATUS_INTERNAL,
                       "libwebp version mismatch");
  }
  VP8StatusCode s = WebPGetFeatures(a->data, a->size, &config.input);
  if (s != VP8_STATUS_OK) {
    return image_error(a, FORMAT_WEBP, WM_STATUS_DATA_LOSS, "%s",
                       webp_status_text(s));
  }
  if (config.input.has_animation) {
    return image_error(a, FORMAT_WEBP, WM_STATUS_UNIMPLEMENTED,
                       "animated images are not supported");
  }
  WM_RETURN_IF_ERROR(image_init(a, FORMAT_WEBP, config.input.height,
                                config.input.width, 3, img));
  if (a->header_only) {
    return NULL;
  }
  config.output.colorspace = MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = img->pixels;
  config.output.u.RGBA.stride = config.input.width * 3;
  config.output.u.RGBA.size =
      (size_t)config.input.width * (size_t)config.input.height * 3;
  s = WebPDecode(a->data, a->size, &config);
  WebPFreeDecBuffer(&config.output);
  if (s != VP8_STATUS_OK) {
    image_deinit(img);
    return image_error(a, FORMAT_WEBP, WM_STATUS_DATA_LOSS, "%s",
                       webp_status_text(s));
  }
  return NULL;
}

#endif  // WM_HAVE_WEBP

// ------------------------------------------------------------- JPEG 2000

#ifdef WM_HAVE_OPENJP2

// The stream OpenJPEG reads through its callbacks.
typedef struct j2k_job {
  const decode_args_t *args;  // the stream
  size_t pos;                 // read position
  char message[256];          // first error OpenJPEG reported
} j2k_job_t;

static OPJ_SIZE_T j2k_read(void *buf, OPJ_SIZE_T n, void *user) {
  j2k_job_t *j = user;
  size_t avail = j->args->size - j->pos;
  if (avail == 0) {
    return (OPJ_SIZE_T)-1;
  }
  size_t take = n < avail ? n : avail;
  memcpy(buf, j->args->data + j->pos, take);
  j->pos += take;
  return take;
}

static OPJ_OFF_T j2k_skip(OPJ_OFF_T n, void *user) {
  j2k_job_t *j = user;
  size_t avail = j->args->size - j->pos;
  if (n < 0 || (uint64_t)n > avail) {
    return -1;
  }
  j->pos += (size_t)n;
  return n;
}

static OPJ_BOOL j2k_seek(OPJ_OFF_T to, void *user) {
  j2k_job_t *j = user;
  if (to < 0 || (uint64_t)to > j->args->size) {
    return OPJ_FALSE;
  }
  j->pos = (size_t)to;
  return OPJ_TRUE;
}

static void j2k_on_error(const char *msg, void *user) {
  j2k_job_t *j = user;
  if (j->message[0]) {
    return;
  }
  snprintf(j->message, sizeof(j->message), "%s", msg);
  size_t len = strlen(j->message);
  while (len > 0 &&
         (j->message[len - 1] == '\n' || j->message[len - 1] == ' ')) {
    j->message[--len] = '\0';
  }
}

static void j2k_quiet(const char *msg, void *user) {
  (void)msg;
  (void)user;
}

// Copies the first |channels| components of |im| into |img| as 8 bits.
static wm_status_t j2k_copy(const decode_args_t *a, const opj_image_t *im,
                            image_t *img) {
  for (int32_t c = 0; c < img->channels; c++) {
    const opj_image_comp_t *comp = &im->comps[c];
    if (!comp->data || comp->w != (OPJ_UINT32)img->width ||
        comp->h != (OPJ_UINT32)img->height) {
      return image_error(a, FORMAT_JPEG2000, WM_STATUS_UNIMPLEMENTED,
                         "component %d is %u x %u in a %lld x %lld image", c,
                         comp->w, comp->h, (long long)img->width,
                         (long long)img->height);
    }
    int64_t offset = comp->sgnd ? (int64_t)1 << (comp->prec - 1) : 0;
    int64_t maxval = ((int64_t)1 << comp->prec) - 1;
    size_t n = (size_t)img->width * (size_t)img->height;
    for (size_t i = 0; i < n; i++) {
      int64_t v = (int64_t)comp->data[i] + offset;
      v = v < 0 ? 0 : v > maxval ? maxval : v;
      uint8_t out = comp->prec > 8
                        ? (uint8_t)(v >> (comp->prec - 8))
                        : scale_to_8bit((uint32_t)v, (uint32_t)maxval);
      img->pixels[i * (size_t)img->channels + (size_t)c] = out;
    }
  }
  return NULL;
}

// Checks that the components of |im| are ones j2k_copy handles and
// returns how many channels they give: gray (with alpha) below three
// components, else RGB (alpha dropped).
static wm_status_t j2k_channels(const decode_args_t *a, const opj_image_t *im,
                                int32_t *out) {
  if (im->numcomps < 1) {
    return image_error(a, FORMAT_JPEG2000, WM_STATUS_DATA_LOSS,
                       "no components");
  }
  if (im->color_space == OPJ_CLRSPC_SYCC ||
      im->color_space == OPJ_CLRSPC_EYCC ||
      im->color_space == OPJ_CLRSPC_CMYK) {
    return image_error(a, FORMAT_JPEG2000, WM_STATUS_UNIMPLEMENTED,
                       "color space %d is not supported", (int)im->color_space);
  }
  *out = im->numcomps >= 3 ? 3 : 1;
  for (int32_t c = 0; c < *out; c++) {
    const opj_image_comp_t *comp = &im->comps[c];
    if (comp->dx != 1 || comp->dy != 1) {
      return image_error(a, FORMAT_JPEG2000, WM_STATUS_UNIMPLEMENTED,
                         "subsampled component %d (%u x %u) is not supported",
                         c, comp->dx, comp->dy);
    }
    if (comp->prec < 1 || comp->prec > 31) {
      return image_error(a, FORMAT_JPEG2000, WM_STATUS_DATA_LOSS,
                         "component %d has %u-bit samples", c, comp->prec);
    }
  }
  return NULL;
}

static wm_status_t j2k_run(const decode_args_t *a, j2k_job_t *j,
                           opj_codec_t *codec, opj_stream_t *stream,
                           opj_image_t **im, image_t *img) {
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(codec, &params) ||
      !opj_read_header(stream, codec, im)) {
    return image_error(a, FORMAT_JPEG2000, WM_STATUS_DATA_LOSS, "%s",
                       j->message[0] ? j->message : "unreadable header");
  }
  int32_t channels;
  WM_RETURN_IF_ERROR(j2k_channels(a, *im, &channels));
  int64_t height = (int64_t)(*im)->y1 - (int64_t)(*im)->y0;
  int64_t width = (int64_t)(*im)->x1 - (int64_t)(*im)->x0;
  decode_args_t header = *a;
  header.header_only = true;
  WM_RETURN_IF_ERROR(
      image_init(&header, FORMAT_JPEG2000, height, width, channels, img));
  if (a->header_only) {
    return NULL;
  }
  if (!opj_decode(codec, stream, *im) || !opj_end_decompress(codec, stream)) {
    return image_error(a, FORMAT_JPEG2000, WM_STATUS_DATA_LOSS, "%s",
                       j->message[0] ? j->message : "undecodable stream");
  }
  // A JP2 palette turns one index component into several colour ones
  // while decoding, so the channels are settled only now.
  WM_RETURN_IF_ERROR(j2k_channels(a, *im, &channels));
  WM_RETURN_IF_ERROR(
      image_init(a, FORMAT_JPEG2000, height, width, channels, img));
  return j2k_copy(a, *im, img);
}

static wm_status_t decode_j2k(const decode_args_t *a, image_t *img) {
  j2k_job_t j;
  memset(&j, 0, sizeof(j));
  j.args = a;
  img->pixels = NULL;
  bool jp2 = a->size >= 4 && a->data[0] == 0 && a->data[3] == 12;
  opj_stream_t *stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  opj_codec_t *codec =
      opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  wm_status_t st = NULL;
  opj_image_t *im = NULL;
  if (!stream || !codec) {
    st = image_error(a, FORMAT_JPEG2000, WM_STATUS_RESOURCE_EXHAUSTED,
                     "cannot create a decoder");
    goto done;
  }
  opj_stream_set_user_data(stream, &j, NULL);
  opj_stream_set_user_data_length(stream, a->size);
  opj_stream_set_read_function(stream, j2k_read);
  opj_stream_set_skip_function(stream, j2k_skip);
  opj_stream_set_seek_function(stream, j2k_seek);
  opj_set_error_handler(codec, j2k_on_error, &j);
  opj_set_warning_handler(codec, j2k_quiet, &j);
  opj_set_info_handler(codec, j2k_quiet, &j);
  st = j2k_run(a, &j, codec, stream, &im, img);
done:
  opj_image_destroy(im);
  if (codec) {
    opj_destroy_codec(codec);
  }
  if (stream) {
    opj_stream_destroy(stream);
  }
  if (st) {
    image_deinit(img);
  }
  return st;
}

#endif  // WM_HAVE_OPENJP2

// ------------------------------------------------------------- operator

// Decodes input 0 (its header only when |header_only|) into |img|.
static wm_status_t decode_image(const wm_op_ctx_t *ctx, bool header_only,
                                image_t *img) {
  const wm_tensor_t *t = ctx->in[0];
  decode_args_t a = {ctx, t->data, t->count, header_only};
  memset(img, 0, sizeof(*img));
  if (t->dtype != WM_DTYPE_UINT8) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "encoded_stream is %s, want uint8",
                       wm_dtype_name(t->dtype));
  }
  if (t->count == 0) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT, "encoded_stream is empty");
  }
  enum image_format f = detect_format(a.data, a.size);
  const char *missing = NULL;
  switch (f) {
    case FORMAT_UNKNOWN:
      return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                         "encoded_stream (%zu bytes starting %02x %02x) is "
                         "not a BMP, JPEG, JPEG 2000, PNG, PNM, TIFF or WebP "
                         "image",
                         a.size, a.data[0], a.size > 1 ? a.data[1] : 0);
    case FORMAT_BMP:
      return decode_bmp(&a, img);
    case FORMAT_PNM:
      return decode_pnm(&a, img);
    case FORMAT_JPEG:
#ifdef WM_HAVE_JPEG
      return decode_jpeg(&a, img);
#else
      missing = "libjpeg";
      break;
#endif
    case FORMAT_PNG:
#ifdef WM_HAVE_PNG
      return decode_png(&a, img);
#else
      missing = "libpng";
      break;
#endif
    case FORMAT_TIFF:
#ifdef WM_HAVE_TIFF
      return decode_tiff(&a, img);
#else
      missing = "libtiff";
      break;
#endif
    case FORMAT_WEBP:
#ifdef WM_HAVE_WEBP
      return decode_webp(&a, img);
#else
      missing = "libwebp";
      break;
#endif
    case FORMAT_JPEG2000:
#ifdef WM_HAVE_OPENJP2
      return decode_j2k(&a, img);
#else
      missing = "libopenjp2";
      break;
#endif
  }
  return image_error(&a, f, WM_STATUS_UNIMPLEMENTED, "built without %s",
                     missing ? missing : "a decoder");
}

static wm_status_t pixel_format(const wm_op_ctx_t *ctx, int *out) {
  static const char *const formats[] = {"RGB", "BGR", "Grayscale", NULL};
  return wm_op_attr_choice(ctx, "pixel_format", "RGB", formats, out);
}

static wm_status_t imgdec_infer(wm_op_ctx_t *ctx) {
  int fmt;
  WM_RETURN_IF_ERROR(pixel_format(ctx, &fmt));
  const wm_shape_t *s = wm_op_in_shape(ctx, 0);
  if (s->rank >= 0 && s->rank != 1) {
    return WM_OP_ERROR(ctx, INVALID_ARGUMENT,
                       "encoded_stream has rank %d, want 1", s->rank);
  }
  wm_shape_t out = {3, {-1, -1, fmt == PIXEL_GRAYSCALE ? 1 : 3}};
  if (ctx->in[0]) {
    image_t img;
    WM_RETURN_IF_ERROR(decode_image(ctx, true, &img));
    out.dims[0] = img.height;
    out.dims[1] = img.width;
  }
  wm_op_set_out(ctx, 0, WM_DTYPE_UINT8, &out);
  return NULL;
}

static wm_status_t imgdec_run(wm_op_ctx_t *ctx) {
  int fmt;
  WM_RETURN_IF_ERROR(pixel_format(ctx, &fmt));
  image_t img;
  WM_RETURN_IF_ERROR(decode_image(ctx, false, &img));
  wm_tensor_t *out = ctx->out[0];
  int64_t c = fmt == PIXEL_GRAYSCALE ? 1 : 3;
  if (out->shape.rank != 3 || out->shape.dims[0] != img.height ||
      out->shape.dims[1] != img.width || out->shape.dims[2] != c) {
    image_deinit(&img);
    return WM_OP_ERROR(ctx, INTERNAL, "output shape does not match");
  }
  uint8_t *o = out->data;
  size_t n = (size_t)img.height * (size_t)img.width;
  const uint8_t *p = img.pixels;
  for (size_t i = 0; i < n; i++) {
    if (img.channels == 1) {
      o[i * (size_t)c] = p[i];
      if (c == 3) {
        o[3 * i + 1] = o[3 * i + 2] = p[i];
      }
    } else if (fmt == PIXEL_GRAYSCALE) {
      o[i] = luma(p + 3 * i);
    } else {
      bool bgr = fmt == PIXEL_BGR;
      o[3 * i] = p[3 * i + (bgr ? 2 : 0)];
      o[3 * i + 1] = p[3 * i + 1];
      o[3 * i + 2] = p[3 * i + (bgr ? 0 : 2)];
    }
  }
  image_deinit(&img);
  return NULL;
}

const wm_op_def_t wm_ops_image[] = {
    {"ImageDecoder", "", 20, 1, 1, 1, 1, WM_T(UINT8), imgdec_infer, imgdec_run,
     NULL},
    WM_OPS_END,
};
