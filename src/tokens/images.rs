//! Images by their size, as the providers publish it.
//!
//! OpenAI (https://platform.openai.com/docs/guides/images-vision#calculating-costs): most models
//! cost a base number of tokens at `detail: "low"`; at high or auto detail the image is scaled
//! to fit 2048×2048, then its shortest side to 768, and each 512-px tile costs a set number of
//! tokens plus the base. gpt-4.1-mini, gpt-4.1-nano, o4-mini, gpt-5-mini and gpt-5-nano count
//! 32-px patches instead (at most 1536, scaling the image down to fit) times a multiplier.
//! Anthropic (https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs):
//! width × height / 750, after scaling the long edge to at most 1568 px and the image to about
//! 1,600 tokens.
//!
//! The pixel size comes from the image's own header (PNG, JPEG, GIF, WebP), read from the
//! base64 data without decoding pixels; four small parsers rather than a crate that reads twenty
//! formats the providers refuse anyway. Whatever they cannot read is counted at a stated default
//! and reported as an estimate.

/// How an image is billed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageRule {
    /// OpenAI's 512-px tiles: `base` at low detail, `base + tile × tiles` at high or auto.
    Tiles { base: u32, tile: u32 },
    /// OpenAI's 32-px patches (capped at 1536) times a multiplier, in thousandths.
    Patches { multiplier_milli: u32 },
    /// Anthropic's width × height / 750.
    Anthropic,
}

/// OpenAI's published image rules by model, most specific prefix first.
const OPENAI_RULES: &[(&str, ImageRule)] = &[
    ("gpt-4.1-mini", ImageRule::Patches { multiplier_milli: 1620 }),
    ("gpt-4.1-nano", ImageRule::Patches { multiplier_milli: 2460 }),
    ("gpt-5-mini", ImageRule::Patches { multiplier_milli: 1620 }),
    ("gpt-5-nano", ImageRule::Patches { multiplier_milli: 2460 }),
    ("o4-mini", ImageRule::Patches { multiplier_milli: 1720 }),
    ("gpt-4o-mini", ImageRule::Tiles { base: 2833, tile: 5667 }),
    ("gpt-5", ImageRule::Tiles { base: 70, tile: 140 }),
    ("gpt-4o", GPT_4O),
    ("chatgpt-4o", GPT_4O),
    ("gpt-4.1", GPT_4O),
    ("gpt-4.5", GPT_4O),
    ("gpt-4-turbo", GPT_4O),
    ("gpt-4-vision", GPT_4O),
    ("gpt-4-1106-vision", GPT_4O),
    ("o1", ImageRule::Tiles { base: 75, tile: 150 }),
    ("o3", ImageRule::Tiles { base: 75, tile: 150 }),
    ("computer-use-preview", ImageRule::Tiles { base: 65, tile: 129 }),
];
const GPT_4O: ImageRule = ImageRule::Tiles { base: 85, tile: 170 };

/// What an image costs when its size is unknown: a 1024×1024 image for OpenAI (765 tokens on
/// gpt-4o at high detail), 1,600 for Anthropic (about the largest image it does not scale).
const DEFAULT_SIZE: (u32, u32) = (1024, 1024);
const ANTHROPIC_DEFAULT: usize = 1600;
const ANTHROPIC_MAX_EDGE: f64 = 1568.0;
const ANTHROPIC_MAX_TOKENS: f64 = 1600.0;
const PATCH: f64 = 32.0;
const MAX_PATCHES: f64 = 1536.0;

impl ImageRule {
    /// The rule OpenAI publishes for `model` (`known`: the model is in the table). Without a
    /// model, gpt-4o's; a model not in the table gets gpt-4o's too, as an estimate.
    pub fn openai(model: Option<&str>) -> (ImageRule, bool) {
        let Some(model) = model else {
            return (GPT_4O, true);
        };
        let id = model.rsplit('/').next().unwrap_or(model);
        match OPENAI_RULES.iter().find(|(prefix, _)| id.starts_with(prefix)) {
            Some(&(_, rule)) => (rule, true),
            None => (GPT_4O, false),
        }
    }

    /// Tokens for an image of `size` (width, height) at `detail`; `None` counts the default size.
    pub fn tokens(self, size: Option<(u32, u32)>, detail: Option<&str>) -> usize {
        match self {
            ImageRule::Tiles { base, .. } if detail == Some("low") => base as usize,
            ImageRule::Tiles { base, tile } => {
                let (w, h) = size.unwrap_or(DEFAULT_SIZE);
                base as usize + tile as usize * openai_tiles(w, h)
            }
            ImageRule::Patches { multiplier_milli } => {
                let (w, h) = size.unwrap_or(DEFAULT_SIZE);
                (openai_patches(w, h) * multiplier_milli as usize).div_ceil(1000)
            }
            ImageRule::Anthropic => size.map_or(ANTHROPIC_DEFAULT, |(w, h)| anthropic_tokens(w, h)),
        }
    }

    /// Whether the size matters for this rule at this detail (a low-detail tile image does not).
    pub fn needs_size(self, detail: Option<&str>) -> bool {
        !matches!((self, detail), (ImageRule::Tiles { .. }, Some("low")))
    }
}

/// 512-px tiles after fitting 2048×2048 and scaling the shortest side down to 768. Sizes are
/// rounded to whole pixels after each step (the API bills 2049×513 as 8 tiles, 2050×513 as 4).
fn openai_tiles(width: u32, height: u32) -> usize {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    if w > 2048.0 || h > 2048.0 {
        let scale = 2048.0 / w.max(h);
        (w, h) = ((w * scale).round().max(1.0), (h * scale).round().max(1.0));
    }
    if w.min(h) > 768.0 {
        let scale = 768.0 / w.min(h);
        (w, h) = ((w * scale).round().max(1.0), (h * scale).round().max(1.0));
    }
    (w / 512.0).ceil() as usize * (h / 512.0).ceil() as usize
}

/// 32-px patches covering the image, scaled down to fit 1536 patches when it needs more.
fn openai_patches(width: u32, height: u32) -> usize {
    let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let raw = (w / PATCH).ceil() * (h / PATCH).ceil();
    if raw <= MAX_PATCHES {
        return raw as usize;
    }
    let mut r = (PATCH * PATCH * MAX_PATCHES / (w * h)).sqrt();
    let (pw, ph) = (w * r / PATCH, h * r / PATCH);
    r *= (pw.floor() / pw).min(ph.floor() / ph);
    // The second scaling makes one side a whole number of patches: float noise must not add one.
    let patches = |side: f64| (side * r / PATCH - 1e-9).ceil().max(1.0);
    (patches(w) * patches(h)).min(MAX_PATCHES) as usize
}

fn anthropic_tokens(width: u32, height: u32) -> usize {
    let (mut w, mut h) = (f64::from(width.max(1)), f64::from(height.max(1)));
    let edge = ANTHROPIC_MAX_EDGE / w.max(h);
    let area = (ANTHROPIC_MAX_TOKENS * 750.0 / (w * h)).sqrt();
    let scale = edge.min(area);
    if scale < 1.0 {
        (w, h) = ((w * scale).floor().max(1.0), (h * scale).floor().max(1.0));
    }
    (w * h / 750.0).ceil() as usize
}

/// Why an image's size could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageError {
    /// Not base64, or not a PNG, JPEG, GIF or WebP image.
    Unrecognised,
    /// The header ends before the size (or says the image is empty).
    Truncated,
}

impl ImageError {
    pub fn describe(self) -> &'static str {
        match self {
            ImageError::Unrecognised => "its data is not a base64 PNG, JPEG, GIF or WebP image",
            ImageError::Truncated => "its data ends before the image's size (or the size is zero)",
        }
    }
}

/// The pixel size of base64 image data. Only a prefix is decoded, unless a JPEG keeps its
/// size further in (after large EXIF or other APPn segments).
pub fn base64_image_size(data: &str) -> Result<(u32, u32), ImageError> {
    let mut limit = 4096;
    loop {
        let head = decode_base64(data, limit).ok_or(ImageError::Unrecognised)?;
        match image_size(&head) {
            Err(ImageError::Truncated) if head.len() == limit => limit = limit.saturating_mul(16),
            other => return other,
        }
    }
}

/// Decodes up to `limit` bytes of standard or URL-safe base64, skipping whitespace, up to the
/// first `=`; `None` for any other character.
pub fn decode_base64(text: &str, limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(limit.min(text.len() / 4 * 3 + 3));
    let (mut buffer, mut bits) = (0u32, 0u32);
    for byte in text.bytes() {
        let value = match (byte, crate::message::base64_digit(byte)) {
            (_, Some(value)) => value,
            (b'=', _) => break,
            (b' ' | b'\t' | b'\r' | b'\n', _) => continue,
            _ => return None,
        };
        buffer = (buffer << 6) | u32::from(value);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buffer >> bits) as u8);
            buffer &= (1 << bits) - 1;
            if out.len() >= limit {
                break;
            }
        }
    }
    Some(out)
}

/// Width and height from a PNG, JPEG, GIF or WebP header.
pub fn image_size(bytes: &[u8]) -> Result<(u32, u32), ImageError> {
    let size = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        png_size(bytes)
    } else if bytes.starts_with(&[0xFF, 0xD8]) {
        jpeg_size(bytes)
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        le16(bytes, 6).zip(le16(bytes, 8)).map(|(w, h)| (u32::from(w), u32::from(h)))
    } else if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WEBP") {
        webp_size(bytes)
    } else {
        return Err(ImageError::Unrecognised);
    };
    match size {
        Some((w, h)) if w > 0 && h > 0 => Ok((w, h)),
        _ => Err(ImageError::Truncated),
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([*b.get(at)?, *b.get(at + 1)?, *b.get(at + 2)?, 0]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The IHDR chunk comes first: width and height at bytes 16 and 20.
fn png_size(b: &[u8]) -> Option<(u32, u32)> {
    (b.get(12..16)? == b"IHDR").then_some(())?;
    Some((be32(b, 16)?, be32(b, 20)?))
}

/// Walks the marker segments (APPn, EXIF, tables…) to the first start-of-frame.
fn jpeg_size(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    loop {
        // Markers may be preceded by any number of 0xFF fill bytes.
        while *b.get(at)? == 0xFF && *b.get(at + 1)? == 0xFF {
            at += 1;
        }
        if *b.get(at)? != 0xFF {
            return None;
        }
        let marker = *b.get(at + 1)?;
        at += 2;
        match marker {
            // Markers without a length: TEM, RSTn, SOI.
            0x01 | 0xD0..=0xD8 => continue,
            // End of image, or the scan began before any frame header.
            0xD9 | 0xDA => return None,
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                return Some((u32::from(be16(b, at + 5)?), u32::from(be16(b, at + 3)?)));
            }
            _ => {
                let length = usize::from(be16(b, at)?);
                if length < 2 {
                    return None;
                }
                at += length;
            }
        }
    }
}

/// Simple (VP8), lossless (VP8L) and extended (VP8X) WebP.
fn webp_size(b: &[u8]) -> Option<(u32, u32)> {
    match b.get(12..16)? {
        b"VP8 " => {
            (b.get(23..26)? == [0x9D, 0x01, 0x2A]).then_some(())?;
            Some((u32::from(le16(b, 26)? & 0x3FFF), u32::from(le16(b, 28)? & 0x3FFF)))
        }
        b"VP8L" => {
            (*b.get(20)? == 0x2F).then_some(())?;
            let bits = u32::from_le_bytes(b.get(21..25)?.try_into().ok()?);
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
        _ => None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::message::data_url_base64;

    const GPT_4O_RULE: ImageRule = ImageRule::Tiles { base: 85, tile: 170 };

    #[test]
    fn openai_tile_examples_from_the_docs() {
        // https://platform.openai.com/docs/guides/images-vision#calculating-costs (gpt-4o)
        assert_eq!(GPT_4O_RULE.tokens(Some((1024, 1024)), Some("high")), 765);
        assert_eq!(GPT_4O_RULE.tokens(Some((2048, 4096)), Some("high")), 1105);
        assert_eq!(GPT_4O_RULE.tokens(Some((4096, 8192)), Some("low")), 85);
        // Images are only scaled down: 500×500 is one tile, 513×500 two, 513×513 four.
        assert_eq!(GPT_4O_RULE.tokens(Some((500, 500)), None), 255);
        assert_eq!(GPT_4O_RULE.tokens(Some((513, 500)), None), 425);
        assert_eq!(GPT_4O_RULE.tokens(Some((513, 513)), None), 765);
        // Whole pixels after scaling (community.openai.com/t/1281361: 2049×513 and 2050×513 billed 1453 and 773 with 8 of text).
        assert_eq!(GPT_4O_RULE.tokens(Some((2049, 513)), None), 1445);
        assert_eq!(GPT_4O_RULE.tokens(Some((2050, 513)), None), 765);
        assert_eq!(GPT_4O_RULE.tokens(None, None), 765);
    }

    #[test]
    fn openai_patch_examples_from_the_docs() {
        let mini = ImageRule::openai(Some("gpt-4.1-mini-2025-04-14")).0;
        assert_eq!(mini, ImageRule::Patches { multiplier_milli: 1620 });
        let unit = ImageRule::Patches { multiplier_milli: 1000 };
        assert_eq!(unit.tokens(Some((1024, 1024)), None), 1024);
        assert_eq!(unit.tokens(Some((1800, 2400)), None), 1452);
        assert_eq!(mini.tokens(Some((1024, 1024)), Some("low")), 1659); // 1024 × 1.62, rounded up
        assert_eq!(ImageRule::openai(Some("o4-mini")).0.tokens(Some((1800, 2400)), None), 2498); // 1452 × 1.72
        for (w, h) in [(1, 1), (32, 32), (33, 33), (10_000, 1), (1, 10_000), (8000, 8000), (4000, 1474)] {
            let patches = openai_patches(w, h);
            assert!((1..=1536).contains(&patches), "{w}x{h}: {patches}");
        }
    }

    #[test]
    fn openai_rules_by_model() {
        assert_eq!(ImageRule::openai(None), (GPT_4O_RULE, true));
        assert_eq!(ImageRule::openai(Some("gpt-4o-2024-08-06")), (GPT_4O_RULE, true));
        assert_eq!(ImageRule::openai(Some("gpt-4o-mini")).0, ImageRule::Tiles { base: 2833, tile: 5667 });
        assert_eq!(ImageRule::openai(Some("gpt-5-chat-latest")).0, ImageRule::Tiles { base: 70, tile: 140 });
        assert_eq!(ImageRule::openai(Some("gpt-5-nano")).0, ImageRule::Patches { multiplier_milli: 2460 });
        assert_eq!(ImageRule::openai(Some("o1-pro")).0, ImageRule::Tiles { base: 75, tile: 150 });
        assert_eq!(ImageRule::openai(Some("openai/gpt-4.1")), (GPT_4O_RULE, true));
        assert_eq!(ImageRule::openai(Some("llava-13b")), (GPT_4O_RULE, false));
    }

    #[test]
    fn anthropic_examples_from_the_docs() {
        // https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs
        assert_eq!(ImageRule::Anthropic.tokens(Some((200, 200)), None), 54);
        assert_eq!(ImageRule::Anthropic.tokens(Some((1000, 1000)), None), 1334);
        assert_eq!(ImageRule::Anthropic.tokens(Some((1092, 1092)), None), 1590);
        // The largest sizes it does not resize cost about 1,600 tokens; bigger ones are scaled to that.
        for (w, h) in [(951, 1268), (896, 1344), (819, 1456), (784, 1568), (4000, 3000), (8000, 100), (1568, 1568)] {
            let tokens = ImageRule::Anthropic.tokens(Some((w, h)), None);
            assert!((1550..=1640).contains(&tokens) || w * h / 750 < 1600, "{w}x{h}: {tokens}");
            assert!(tokens <= 1640, "{w}x{h}: {tokens}");
        }
        assert_eq!(ImageRule::Anthropic.tokens(None, None), 1600);
    }

    pub(crate) fn png(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend(w.to_be_bytes());
        b.extend(h.to_be_bytes());
        b.extend([8, 6, 0, 0, 0]);
        b
    }

    fn jpeg(w: u16, h: u16, exif_bytes: usize) -> Vec<u8> {
        let mut b = vec![0xFF, 0xD8];
        // APP1 (EXIF) segments as large as JPEG allows, then a quantisation table, then SOF2.
        let mut left = exif_bytes;
        while left > 0 {
            let n = left.min(65_000);
            b.extend([0xFF, 0xE1]);
            b.extend(((n + 2) as u16).to_be_bytes());
            b.extend(std::iter::repeat_n(0xAB, n));
            left -= n;
        }
        b.extend([0xFF, 0xFF, 0xDB, 0x00, 0x04, 0x00, 0x00]);
        b.extend([0xFF, 0xC2, 0x00, 0x11, 0x08]);
        b.extend(h.to_be_bytes());
        b.extend(w.to_be_bytes());
        b.extend([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]);
        b.extend([0xFF, 0xDA]);
        b
    }

    pub(crate) fn base64(bytes: &[u8]) -> String {
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().enumerate().fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
            for i in 0..4 {
                if i <= chunk.len() {
                    out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    #[test]
    fn headers_of_every_format() {
        assert_eq!(image_size(&png(1024, 768)), Ok((1024, 768)));
        assert_eq!(image_size(&jpeg(640, 480, 0)), Ok((640, 480)));
        assert_eq!(image_size(b"GIF89a\x20\x03\x58\x02\0\0"), Ok((800, 600)));
        let mut vp8 = b"RIFF\0\0\0\0WEBPVP8 \0\0\0\0\x30\x01\x00\x9d\x01\x2a".to_vec();
        vp8.extend([0x80, 0x02, 0xE0, 0x01]);
        assert_eq!(image_size(&vp8), Ok((640, 480)));
        let mut vp8l = b"RIFF\0\0\0\0WEBPVP8L\0\0\0\0\x2f".to_vec();
        vp8l.extend((639u32 | (479 << 14)).to_le_bytes());
        assert_eq!(image_size(&vp8l), Ok((640, 480)));
        let mut vp8x = b"RIFF\0\0\0\0WEBPVP8X\0\0\0\0\x10\0\0\0".to_vec();
        vp8x.extend([0x7F, 0x07, 0x00, 0x37, 0x04, 0x00]);
        assert_eq!(image_size(&vp8x), Ok((1920, 1080)));
        assert_eq!(image_size(b"BM...."), Err(ImageError::Unrecognised));
        assert_eq!(image_size(&png(0, 10)), Err(ImageError::Truncated));
        assert_eq!(image_size(&png(10, 10)[..20]), Err(ImageError::Truncated));
    }

    #[test]
    fn jpeg_sizes_after_large_exif_segments_are_found() {
        let big = jpeg(4032, 3024, 150_000);
        let encoded = base64(&big);
        assert_eq!(base64_image_size(&encoded), Ok((4032, 3024)));
        let with_newlines: String =
            encoded.as_bytes().chunks(76).map(|l| std::str::from_utf8(l).unwrap_or("")).collect::<Vec<_>>().join("\n");
        assert_eq!(base64_image_size(&with_newlines), Ok((4032, 3024)));
        assert_eq!(base64_image_size(&encoded[..4000]), Err(ImageError::Truncated));
        assert_eq!(base64_image_size("not base64!"), Err(ImageError::Unrecognised));
        assert_eq!(base64_image_size(""), Err(ImageError::Unrecognised));
    }

    #[test]
    fn data_urls() {
        assert_eq!(data_url_base64("data:image/png;base64,AAAA"), Some("AAAA"));
        assert_eq!(data_url_base64("data:image/svg+xml,<svg/>"), None);
        assert_eq!(data_url_base64("https://example.com/a.png"), None);
        let url = format!("data:image/png;base64,{}", base64(&png(3000, 1000)));
        assert_eq!(base64_image_size(data_url_base64(&url).unwrap_or("")), Ok((3000, 1000)));
    }

    mod fuzz {
        use super::super::*;
        use proptest::prelude::*;

        fn prefixes() -> impl Strategy<Value = Vec<u8>> {
            prop_oneof![
                Just(b"\x89PNG\r\n\x1a\n".to_vec()),
                Just(vec![0xFF, 0xD8]),
                Just(b"GIF89a".to_vec()),
                Just(b"RIFF\0\0\0\0WEBPVP8 ".to_vec()),
                Just(b"RIFF\0\0\0\0WEBPVP8L".to_vec()),
                Just(b"RIFF\0\0\0\0WEBPVP8X".to_vec()),
                Just(Vec::new()),
            ]
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(4000))]

            #[test]
            fn random_bytes_after_any_magic_never_panic(prefix in prefixes(), tail in proptest::collection::vec(any::<u8>(), 0..300)) {
                let mut bytes = prefix;
                bytes.extend(tail);
                if let Ok((w, h)) = image_size(&bytes) {
                    prop_assert!(w > 0 && h > 0);
                    for rule in [ImageRule::Anthropic, ImageRule::Tiles { base: 85, tile: 170 }, ImageRule::Patches { multiplier_milli: 1720 }] {
                        let tokens = rule.tokens(Some((w, h)), None);
                        prop_assert!(tokens > 0 && tokens < 100_000, "{w}x{h}: {tokens}");
                    }
                }
            }

            #[test]
            fn random_text_as_base64_never_panics(text in "[A-Za-z0-9+/=_\\- \n]{0,400}|\\PC{0,50}") {
                let _ = base64_image_size(&text);
            }

            #[test]
            fn any_size_costs_a_bounded_number_of_tokens(w in 1u32.., h in 1u32..) {
                prop_assert!((1..=1640).contains(&ImageRule::Anthropic.tokens(Some((w, h)), None)));
                let tiles = ImageRule::Tiles { base: 85, tile: 170 }.tokens(Some((w, h)), None);
                let patches = ImageRule::Patches { multiplier_milli: 1000 }.tokens(Some((w, h)), None);
                prop_assert!(tiles <= 85 + 170 * 12);
                prop_assert!(patches <= 1536);
            }
        }
    }
}
