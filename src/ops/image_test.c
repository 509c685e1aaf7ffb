// Tests of ImageDecoder: hand-written BMP, PNM and TIFF files decoded to
// known pixels in each pixel format, PNG, JPEG and WebP images encoded
// here with their libraries and decoded back, shapes before and after the
// value is known, and the errors of corrupt, truncated and unknown
// streams and bad attributes.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef WM_HAVE_JPEG
#include <jpeglib.h>
#endif
#ifdef WM_HAVE_PNG
#include <png.h>
#endif
#ifdef WM_HAVE_WEBP
#include <webp/encode.h>
#endif

#include "op_fixture.h"
#include "wm_test.h"

// Builds ImageDecoder (opset 20) over the |n| constant bytes |bytes| with
// |format| (NULL keeps the default).
static wm_status_t decoder_node(wm_op_fixture_t *f, const uint8_t *bytes,
                                size_t n, const char *format) {
  WM_RETURN_IF_ERROR(wm_op_fixture_init(f, 20));
  int64_t *v = malloc((n ? n : 1) * sizeof(int64_t));
  WM_ASSERT(v);
  for (size_t i = 0; i < n; i++) {
    v[i] = bytes[i];
  }
  int64_t d[1] = {(int64_t)n};
  wm_status_t s = wm_op_fixture_add_const_i64(f, "x", WM_DTYPE_UINT8, 1, d, v);
  free(v);
  WM_RETURN_IF_ERROR(s);
  const char *in[1] = {"x"};
  WM_RETURN_IF_ERROR(wm_op_fixture_add_node(f, "ImageDecoder", in, 1, 1));
  if (format) {
    WM_RETURN_IF_ERROR(wm_op_fixture_attr_string(f, "pixel_format", format));
  }
  return NULL;
}

// Decodes |bytes| with |format|; the output is left in f->out[0].
static wm_status_t decode(wm_op_fixture_t *f, const uint8_t *bytes, size_t n,
                          const char *format) {
  WM_RETURN_IF_ERROR(decoder_node(f, bytes, n, format));
  return wm_op_fixture_run(f);
}

// Returns true when decoding |bytes| fails with a message holding |part|.
static bool decode_fails_with(const uint8_t *bytes, size_t n,
                              const char *part) {
  wm_op_fixture_t f;
  wm_status_t s = decoder_node(&f, bytes, n, NULL);
  if (!s) {
    s = wm_op_fixture_run(&f);
  }
  wm_op_fixture_deinit(&f);
  return wm_op_fixture_fails_with(s, part);
}

// A 2 x 2 24-bit BMP stored bottom-up: red, green / blue, (10, 20, 30).
static const uint8_t bmp_2x2[70] = {
    'B',  'M', 70,   0,  0,    0,  0, 0, 0, 0, 54, 0, 0, 0,  // file header
    40,   0,   0,    0,  2,    0,  0, 0, 2, 0, 0,  0, 1, 0,
    24,   0,  // size, w, h, 24 bits
    0,    0,   0,    0,  16,   0,  0, 0, 0, 0, 0,  0, 0, 0,
    0,    0,                              // no compression
    0,    0,   0,    0,  0,    0,  0, 0,  // palette counts
    0xFF, 0,   0,    30, 20,   10, 0, 0,  // bottom row (BGR)
    0,    0,   0xFF, 0,  0xFF, 0,  0, 0,  // top row (BGR)
};

// The pixels of bmp_2x2, top-down RGB.
static const double bmp_2x2_rgb[12] = {255, 0, 0,   0,  255, 0,
                                       0,   0, 255, 10, 20,  30};

WM_TEST(decodes_24bit_bottom_up_bmp_to_rgb) {
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, bmp_2x2, sizeof(bmp_2x2), NULL);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 2, 3}) &&
            wm_op_fixture_values_near(f.out[0], bmp_2x2_rgb, 12, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(bgr_swaps_red_and_blue) {
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, bmp_2x2, sizeof(bmp_2x2), "BGR");
  static const double want[12] = {0, 0, 255, 0, 255, 0, 255, 0, 0, 30, 20, 10};
  bool ok = !s && wm_op_fixture_values_near(f.out[0], want, 12, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(grayscale_uses_rounded_601_luma) {
  // (19595 R + 38470 G + 7471 B + 32768) >> 16: red 76, green 150, blue
  // 29, and (10, 20, 30) gives 1222248 >> 16 = 18.
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, bmp_2x2, sizeof(bmp_2x2), "Grayscale");
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 2, 1}) &&
            wm_op_fixture_values_near(f.out[0],
                                      (const double[]){76, 150, 29, 18}, 4, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

// A 3 x 1 8-bit BMP stored top-down with a 2-entry palette; the last
// pixel uses entry |last|.
static void bmp_palette(uint8_t last, uint8_t out[66]) {
  static const uint8_t head[54] = {
      'B', 'M', 66, 0, 0, 0, 0, 0, 0, 0, 62, 0, 0, 0,   // pixels at
                                                        // 62
      40, 0, 0, 0, 3, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF,  // w 3, h -1
      1, 0, 8, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0,
      0,                                   // 8 bits
      0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,  // 2 colours
  };
  memcpy(out, head, 54);
  static const uint8_t pal[8] = {10, 20, 30, 0, 40, 50, 60, 0};  // BGRX
  memcpy(out + 54, pal, 8);
  out[62] = 1;
  out[63] = 0;
  out[64] = last;
  out[65] = 0;  // row padding
}

WM_TEST(decodes_top_down_palette_bmp) {
  uint8_t b[66];
  bmp_palette(1, b);
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, b, sizeof(b), NULL);
  static const double want[9] = {60, 50, 40, 30, 20, 10, 60, 50, 40};
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){1, 3, 3}) &&
            wm_op_fixture_values_near(f.out[0], want, 9, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(bmp_rejects_index_beyond_palette) {
  uint8_t b[66];
  bmp_palette(2, b);
  WM_CHECK(decode_fails_with(b, sizeof(b),
                             "BMP image: pixel (2, 0) uses entry 2 of a "
                             "2-entry palette"));
}

WM_TEST(bmp_rejects_truncated_pixels_and_headers) {
  WM_CHECK(decode_fails_with(bmp_2x2, sizeof(bmp_2x2) - 1,
                             "(ImageDecoder): BMP image: pixel data "
                             "truncated"));
  WM_CHECK(decode_fails_with(bmp_2x2, 20, "BMP image: truncated 40-byte"));
  uint8_t b[70];
  memcpy(b, bmp_2x2, sizeof(b));
  b[28] = 7;  // bit depth
  WM_CHECK(decode_fails_with(b, sizeof(b), "BMP image: invalid bit depth 7"));
  memcpy(b, bmp_2x2, sizeof(b));
  b[30] = 1;  // RLE8
  WM_CHECK(decode_fails_with(b, sizeof(b), "run-length encoded"));
  memcpy(b, bmp_2x2, sizeof(b));
  b[10] = 0xF0;  // pixel offset past the end
  WM_CHECK(decode_fails_with(b, sizeof(b), "pixel data truncated"));
}

WM_TEST(decodes_raw_ppm) {
  static const char ppm[] =
      "P6\n# two pixels\n2 1\n255\n\x01\x02\x03\xFA\xFB\xFC";
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, (const uint8_t *)ppm, sizeof(ppm) - 1, NULL);
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){1, 2, 3}) &&
            wm_op_fixture_values_near(
                f.out[0], (const double[]){1, 2, 3, 250, 251, 252}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(decodes_plain_pgm_scaling_maxval_and_pbm) {
  // maxval 15: 15 -> 255, 7 -> round(7 * 255 / 15) = 119; gray expands to
  // three equal channels.
  static const char pgm[] = "P2 2 1 15 # comment\n15 7\n";
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, (const uint8_t *)pgm, sizeof(pgm) - 1, NULL);
  bool ok =
      !s && wm_op_fixture_values_near(
                f.out[0], (const double[]){255, 255, 255, 119, 119, 119}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // PBM: 1 is black; plain digits need no separator.
  static const char pbm[] = "P1\n3 1\n010";
  s = decode(&f, (const uint8_t *)pbm, sizeof(pbm) - 1, "Grayscale");
  ok = !s &&
       wm_op_fixture_values_near(f.out[0], (const double[]){255, 0, 255}, 3, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // Raw PBM rows are padded to whole bytes.
  static const uint8_t pbm_raw[] = {'P', '4',  ' ',  '3', ' ',
                                    '2', '\n', 0x40, 0xA0};
  s = decode(&f, pbm_raw, sizeof(pbm_raw), "Grayscale");
  ok = !s && wm_op_fixture_values_near(
                 f.out[0], (const double[]){255, 0, 255, 0, 255, 0}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
}

WM_TEST(pnm_rejects_truncated_and_malformed_streams) {
  static const char short_ppm[] = "P6\n2 1\n255\n\x01\x02\x03";
  WM_CHECK(decode_fails_with((const uint8_t *)short_ppm, sizeof(short_ppm) - 1,
                             "PNM image: P6 raster truncated"));
  static const char no_height[] = "P5\n2\n";
  WM_CHECK(decode_fails_with((const uint8_t *)no_height, sizeof(no_height) - 1,
                             "PNM image: malformed P5 header"));
  static const char big[] = "P2 1 1 9 10";
  WM_CHECK(decode_fails_with((const uint8_t *)big, sizeof(big) - 1,
                             "PNM image: sample 10 exceeds maxval 9"));
  static const char zero[] = "P5 0 1 255 ";
  WM_CHECK(decode_fails_with((const uint8_t *)zero, sizeof(zero) - 1,
                             "PNM image: invalid dimensions 0 x 1"));
  // Four hundred million pixels from a 20-byte header: refused up front.
  static const char bomb[] = "P5 20000 20000 255 ";
  WM_CHECK(decode_fails_with((const uint8_t *)bomb, sizeof(bomb) - 1,
                             "PNM image: 20000 x 20000 pixels exceed the "
                             "limit of 178956970"));
}

// Appends a little-endian TIFF directory entry.
static uint8_t *tiff_entry(uint8_t *p, uint16_t tag, uint16_t type,
                           uint32_t count, uint32_t value) {
  uint8_t e[12] = {
      (uint8_t)tag,           (uint8_t)(tag >> 8),    (uint8_t)type,
      (uint8_t)(type >> 8),   (uint8_t)count,         (uint8_t)(count >> 8),
      (uint8_t)(count >> 16), (uint8_t)(count >> 24), (uint8_t)value,
      (uint8_t)(value >> 8),  (uint8_t)(value >> 16), (uint8_t)(value >> 24)};
  memcpy(p, e, 12);
  return p + 12;
}

// Builds an uncompressed 2 x 1 TIFF in |out| (at least 160 bytes): 8-bit
// gray 10, 200 when |palette| is false, else 1-bit pixels 1, 0 through a
// colour map; returns its size.
static size_t tiff_2x1(bool palette, uint8_t *out) {
  enum { SHORT = 3, LONG = 4 };
  uint16_t n = palette ? 10 : 9;
  size_t ifd_end = 8 + 2 + (size_t)n * 12 + 4;
  size_t map_at = ifd_end, pixels_at = ifd_end + (palette ? 12 : 0);
  memcpy(out, "II*\0\x08\0\0\0", 8);
  out[8] = (uint8_t)n;
  out[9] = 0;
  uint8_t *p = out + 10;
  p = tiff_entry(p, 256, SHORT, 1, 2);                   // ImageWidth
  p = tiff_entry(p, 257, SHORT, 1, 1);                   // ImageLength
  p = tiff_entry(p, 258, SHORT, 1, palette ? 1 : 8);     // BitsPerSample
  p = tiff_entry(p, 259, SHORT, 1, 1);                   // no compression
  p = tiff_entry(p, 262, SHORT, 1, palette ? 3 : 1);     // Photometric
  p = tiff_entry(p, 273, LONG, 1, (uint32_t)pixels_at);  // StripOffsets
  p = tiff_entry(p, 277, SHORT, 1, 1);                   // SamplesPerPixel
  p = tiff_entry(p, 278, SHORT, 1, 1);                   // RowsPerStrip
  p = tiff_entry(p, 279, LONG, 1, palette ? 1 : 2);      // StripByteCounts
  if (palette) {
    p = tiff_entry(p, 320, SHORT, 6, (uint32_t)map_at);  // ColorMap
  }
  memset(p, 0, 4);  // no next directory
  if (palette) {
    // Red 0x0000, 0xFFFF; green 0x8080, 0x4040; blue 0x1010, 0x2020.
    static const uint8_t map[12] = {0,    0,    0xFF, 0xFF, 0x80, 0x80,
                                    0x40, 0x40, 0x10, 0x10, 0x20, 0x20};
    memcpy(out + map_at, map, 12);
    out[pixels_at] = 0x80;  // pixels 1, 0
    return pixels_at + 1;
  }
  out[pixels_at] = 10;
  out[pixels_at + 1] = 200;
  return pixels_at + 2;
}

WM_TEST(tiff_decodes_gray_strips_and_palettes_or_says_it_cannot) {
  uint8_t b[160];
  size_t n = tiff_2x1(false, b);
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, b, n, NULL);
#ifdef WM_HAVE_TIFF
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){1, 2, 3}) &&
            wm_op_fixture_values_near(
                f.out[0], (const double[]){10, 10, 10, 200, 200, 200}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  n = tiff_2x1(true, b);
  s = decode(&f, b, n, NULL);
  // libtiff scales 16-bit map entries to their high byte.
  ok = !s && wm_op_fixture_values_near(
                 f.out[0], (const double[]){255, 64, 32, 0, 128, 16}, 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  WM_CHECK(decode_fails_with(b, 20, "(ImageDecoder): TIFF image: "));
#else
  wm_op_fixture_deinit(&f);
  WM_CHECK(wm_op_fixture_fails_with(s, "TIFF image: built without libtiff"));
#endif
}

#ifdef WM_HAVE_PNG
// Encodes |w| x |h| pixels of libpng's simplified |format| as PNG; the
// caller frees *out.
static size_t png_encode(const uint8_t *pixels, uint32_t w, uint32_t h,
                         uint32_t format, uint8_t **out) {
  png_image im;
  memset(&im, 0, sizeof(im));
  im.version = PNG_IMAGE_VERSION;
  im.width = w;
  im.height = h;
  im.format = format;
  png_alloc_size_t size = 0;
  WM_ASSERT(png_image_write_to_memory(&im, NULL, &size, 0, pixels, 0, NULL));
  *out = malloc(size);
  WM_ASSERT(*out);
  WM_ASSERT(png_image_write_to_memory(&im, *out, &size, 0, pixels, 0, NULL));
  return size;
}
#endif

WM_TEST(png_round_trips_rgb_and_drops_alpha) {
#ifdef WM_HAVE_PNG
  static const uint8_t rgb[18] = {1,  2,  3,  40, 50, 60, 70,  80,  90,
                                  11, 22, 33, 44, 55, 66, 200, 210, 220};
  uint8_t *enc;
  size_t n = png_encode(rgb, 3, 2, PNG_FORMAT_RGB, &enc);
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, enc, n, NULL);
  double want[18];
  for (int i = 0; i < 18; i++) {
    want[i] = rgb[i];
  }
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 3, 3}) &&
            wm_op_fixture_values_near(f.out[0], want, 18, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  // Cutting the stream inside IDAT is an error, not a partial image.
  bool cut = decode_fails_with(enc, n - 20, "(ImageDecoder): PNG image: ");
  enc[20] ^= 0xFF;  // IHDR no longer matches its CRC
  bool crc = decode_fails_with(enc, n, "PNG image: ");
  free(enc);
  WM_CHECK(cut);
  WM_CHECK(crc);
  static const uint8_t rgba[8] = {9, 8, 7, 0, 6, 5, 4, 255};
  n = png_encode(rgba, 2, 1, PNG_FORMAT_RGBA, &enc);
  s = decode(&f, enc, n, "BGR");
  free(enc);
  ok = !s && wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){1, 2, 3}) &&
       wm_op_fixture_values_near(f.out[0], (const double[]){7, 8, 9, 4, 5, 6},
                                 6, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
#else
  static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  WM_CHECK(decode_fails_with(png, 8, "PNG image: built without libpng"));
#endif
}

#ifdef WM_HAVE_JPEG
// Encodes |w| x |h| pixels of |comps| channels (1 gray, 3 RGB) as a
// quality-100 baseline JPEG; the caller frees *out.
static size_t jpeg_encode(const uint8_t *pixels, uint32_t w, uint32_t h,
                          int comps, uint8_t **out) {
  struct jpeg_compress_struct c;
  struct jpeg_error_mgr e;
  c.err = jpeg_std_error(&e);
  jpeg_create_compress(&c);
  unsigned char *buf = NULL;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &buf, &size);
  c.image_width = w;
  c.image_height = h;
  c.input_components = comps;
  c.in_color_space = comps == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  while (c.next_scanline < h) {
    JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * w * comps);
    jpeg_write_scanlines(&c, &row, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  *out = buf;
  return size;
}
#endif

WM_TEST(jpeg_round_trips_flat_colour_and_rejects_truncation) {
#ifdef WM_HAVE_JPEG
  uint8_t rgb[16 * 8 * 3];
  for (size_t i = 0; i < sizeof(rgb); i += 3) {
    rgb[i] = 200;
    rgb[i + 1] = 100;
    rgb[i + 2] = 50;
  }
  uint8_t *enc;
  size_t n = jpeg_encode(rgb, 16, 8, 3, &enc);
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, enc, n, "BGR");
  double want[16 * 8 * 3];
  for (size_t i = 0; i < sizeof(rgb); i += 3) {
    want[i] = 50;
    want[i + 1] = 100;
    want[i + 2] = 200;
  }
  // Colour conversion both ways may move a channel by a step or two.
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){8, 16, 3}) &&
            wm_op_fixture_values_near(f.out[0], want, 16 * 8 * 3, 2);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  bool cut = decode_fails_with(enc, n / 2, "(ImageDecoder): JPEG image: ");
  bool header = decode_fails_with(enc, 40, "JPEG image: ");
  free(enc);
  WM_CHECK(cut);
  WM_CHECK(header);
  // A gray JPEG decodes to one channel, replicated for RGB.
  uint8_t gray[8 * 8];
  memset(gray, 77, sizeof(gray));
  n = jpeg_encode(gray, 8, 8, 1, &enc);
  s = decode(&f, enc, n, NULL);
  free(enc);
  double want_gray[8 * 8 * 3];
  for (size_t i = 0; i < 8 * 8 * 3; i++) {
    want_gray[i] = 77;
  }
  ok = !s && wm_op_fixture_values_near(f.out[0], want_gray, 8 * 8 * 3, 1);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
#else
  static const uint8_t jpeg[4] = {0xFF, 0xD8, 0xFF, 0xE0};
  WM_CHECK(decode_fails_with(jpeg, 4, "JPEG image: built without libjpeg"));
#endif
}

WM_TEST(webp_round_trips_lossless_rgb) {
#ifdef WM_HAVE_WEBP
  static const uint8_t rgb[12] = {1, 2, 3, 250, 128, 7, 0, 0, 0, 99, 98, 97};
  uint8_t *enc = NULL;
  size_t n = WebPEncodeLosslessRGB(rgb, 2, 2, 6, &enc);
  WM_CHECK(n > 0);
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, enc, n, NULL);
  double want[12];
  for (int i = 0; i < 12; i++) {
    want[i] = rgb[i];
  }
  bool ok = !s &&
            wm_op_fixture_shape_is(f.out[0], 3, (const int64_t[]){2, 2, 3}) &&
            wm_op_fixture_values_near(f.out[0], want, 12, 0);
  WM_OP_FIXTURE_CHECK_DONE(&f, s, ok);
  bool cut = decode_fails_with(enc, n - 4, "(ImageDecoder): WebP image: ");
  WebPFree(enc);
  WM_CHECK(cut);
#else
  static const char webp[] = "RIFF\x10\0\0\0WEBPVP8 ";
  WM_CHECK(decode_fails_with((const uint8_t *)webp, sizeof(webp) - 1,
                             "WebP image: built without libwebp"));
#endif
}

WM_TEST(jpeg2000_rejects_corrupt_codestream) {
  // A JP2 signature box followed by garbage, and a bare codestream start.
  static const uint8_t jp2[24] = {0,    0,    0,    12,   'j', 'P', ' ', ' ',
                                  '\r', '\n', 0x87, '\n', 0,   0,   0,   20,
                                  'f',  't',  'y',  'p',  1,   2,   3,   4};
  static const uint8_t j2k[8] = {0xFF, 0x4F, 0xFF, 0x51, 0, 41, 0, 0};
#ifdef WM_HAVE_OPENJP2
  WM_CHECK(
      decode_fails_with(jp2, sizeof(jp2), "(ImageDecoder): JPEG 2000 image: "));
  WM_CHECK(decode_fails_with(j2k, sizeof(j2k), "JPEG 2000 image: "));
#else
  WM_CHECK(decode_fails_with(jp2, sizeof(jp2),
                             "JPEG 2000 image: built without libopenjp2"));
  (void)j2k;
#endif
}

// Checks that every prefix of |bytes| (stepping by |step|) fails with a
// status naming |format|, or, when too short to recognise, the stream.
static bool every_prefix_fails(const uint8_t *bytes, size_t n, size_t step,
                               const char *format) {
  char want[64];
  snprintf(want, sizeof(want), "%s image: ", format);
  for (size_t len = 0; len < n; len += step) {
    wm_op_fixture_t f;
    wm_status_t s = decode(&f, bytes, len, NULL);
    wm_op_fixture_deinit(&f);
    const char *text = s ? wm_status_message(s) : "";
    bool ok = s && (strstr(text, want) || strstr(text, "is not a BMP") ||
                    strstr(text, "encoded_stream is empty"));
    if (!ok) {
      fprintf(stderr, "%s prefix of %zu of %zu bytes: %s\n", format, len, n,
              s ? text : "decoded");
      wm_status_free(s);
      return false;
    }
    wm_status_free(s);
  }
  return true;
}

// Fills 8 x 8 RGB pixels with a pattern that compresses poorly.
static void pattern_8x8(uint8_t rgb[8 * 8 * 3]) {
  for (size_t i = 0; i < 8 * 8 * 3; i++) {
    rgb[i] = (uint8_t)(i * 37);
  }
}

WM_TEST(every_truncation_is_an_error_naming_the_format) {
  WM_CHECK(every_prefix_fails(bmp_2x2, sizeof(bmp_2x2), 1, "BMP"));
  static const char ppm[] = "P6\n2 1\n255\n\x01\x02\x03\xFA\xFB\xFC";
  WM_CHECK(every_prefix_fails((const uint8_t *)ppm, sizeof(ppm) - 1, 1, "PNM"));
  uint8_t tiff[160];
  WM_CHECK(every_prefix_fails(tiff, tiff_2x1(false, tiff), 1, "TIFF"));
  uint8_t rgb[8 * 8 * 3];
  pattern_8x8(rgb);
#ifdef WM_HAVE_PNG
  {
    uint8_t *enc;
    size_t n = png_encode(rgb, 8, 8, PNG_FORMAT_RGB, &enc);
    bool ok = every_prefix_fails(enc, n, 1, "PNG");
    free(enc);
    WM_CHECK(ok);
  }
#endif
#ifdef WM_HAVE_JPEG
  {
    uint8_t *enc;
    size_t n = jpeg_encode(rgb, 8, 8, 3, &enc);
    bool ok = every_prefix_fails(enc, n, 1, "JPEG");
    free(enc);
    WM_CHECK(ok);
  }
#endif
#ifdef WM_HAVE_WEBP
  {
    uint8_t *enc = NULL;
    size_t n = WebPEncodeLosslessRGB(rgb, 8, 8, 24, &enc);
    bool ok = n > 0 && every_prefix_fails(enc, n, 1, "WebP");
    WebPFree(enc);
    WM_CHECK(ok);
  }
#endif
}

WM_TEST(rejects_unknown_and_empty_streams) {
  static const char text[] = "hello, world";
  WM_CHECK(decode_fails_with((const uint8_t *)text, sizeof(text) - 1,
                             "(12 bytes starting 68 65) is not a BMP, JPEG"));
  WM_CHECK(decode_fails_with(NULL, 0, "encoded_stream is empty"));
}

WM_TEST(rejects_unknown_pixel_format) {
  wm_op_fixture_t f;
  wm_status_t s = decode(&f, bmp_2x2, sizeof(bmp_2x2), "RGBA");
  wm_op_fixture_deinit(&f);
  WM_CHECK(wm_op_fixture_fails_with(
      s,
      "attribute pixel_format is \"RGBA\", want one of \"RGB\", \"BGR\", "
      "\"Grayscale\""));
}

WM_TEST(shape_is_known_from_the_header_of_a_constant_stream) {
  wm_op_fixture_t f;
  WM_CHECK_OK(decoder_node(&f, bmp_2x2, sizeof(bmp_2x2), "Grayscale"));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.dtype, WM_DTYPE_UINT8);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], 2);
  WM_CHECK_INT_EQ(t.shape.dims[1], 2);
  WM_CHECK_INT_EQ(t.shape.dims[2], 1);
}

WM_TEST(shape_has_unknown_height_and_width_for_an_input_stream) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_UINT8, 1,
                                      (const int64_t[]){-1}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ImageDecoder", in, 1, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK_OK(s);
  WM_CHECK_INT_EQ(t.shape.rank, 3);
  WM_CHECK_INT_EQ(t.shape.dims[0], -1);
  WM_CHECK_INT_EQ(t.shape.dims[1], -1);
  WM_CHECK_INT_EQ(t.shape.dims[2], 3);
}

WM_TEST(rejects_stream_of_rank_two) {
  wm_op_fixture_t f;
  WM_CHECK_OK(wm_op_fixture_init(&f, 20));
  WM_CHECK_OK(wm_op_fixture_add_input(&f, "x", WM_DTYPE_UINT8, 2,
                                      (const int64_t[]){2, 35}));
  const char *in[1] = {"x"};
  WM_CHECK_OK(wm_op_fixture_add_node(&f, "ImageDecoder", in, 1, 1));
  wm_type_t t;
  wm_status_t s = wm_op_fixture_infer(&f, &t);
  wm_op_fixture_deinit(&f);
  WM_CHECK(wm_op_fixture_fails_with(s, "encoded_stream has rank 2, want 1"));
}

static const wm_test_case_t cases[] = {
    WM_CASE(decodes_24bit_bottom_up_bmp_to_rgb),
    WM_CASE(bgr_swaps_red_and_blue),
    WM_CASE(grayscale_uses_rounded_601_luma),
    WM_CASE(decodes_top_down_palette_bmp),
    WM_CASE(bmp_rejects_index_beyond_palette),
    WM_CASE(bmp_rejects_truncated_pixels_and_headers),
    WM_CASE(decodes_raw_ppm),
    WM_CASE(decodes_plain_pgm_scaling_maxval_and_pbm),
    WM_CASE(pnm_rejects_truncated_and_malformed_streams),
    WM_CASE(tiff_decodes_gray_strips_and_palettes_or_says_it_cannot),
    WM_CASE(png_round_trips_rgb_and_drops_alpha),
    WM_CASE(jpeg_round_trips_flat_colour_and_rejects_truncation),
    WM_CASE(webp_round_trips_lossless_rgb),
    WM_CASE(jpeg2000_rejects_corrupt_codestream),
    WM_CASE(every_truncation_is_an_error_naming_the_format),
    WM_CASE(rejects_unknown_and_empty_streams),
    WM_CASE(rejects_unknown_pixel_format),
    WM_CASE(shape_is_known_from_the_header_of_a_constant_stream),
    WM_CASE(shape_has_unknown_height_and_width_for_an_input_stream),
    WM_CASE(rejects_stream_of_rank_two),
    {NULL, NULL},
};

int main(void) {
  return wm_test_main(cases);
}
