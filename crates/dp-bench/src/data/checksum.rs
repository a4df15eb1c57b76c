//! Integrity check of the staged data files against shared/data/README.md's table.
//!
//! SHA-256 (FIPS 180-4) is implemented here, in a few dozen lines, because the workspace has no
//! hashing crate; it is only used to compare files with published digests, never for security.

use std::io::Read;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use dp_data::open;

/// One staged file as recorded in shared/data/README.md's table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StagedFile {
    /// Path relative to the data directory (e.g. `adult/adult.data.gz`).
    pub path: &'static str,
    /// Size of the `.gz` file in bytes.
    pub gz_bytes: u64,
    /// Size after decompression in bytes.
    pub bytes: u64,
    /// SHA-256 of the decompressed bytes, lowercase hex.
    pub sha256: &'static str,
}

/// The files of shared/data/README.md's table, in its order.
pub fn staged_files() -> &'static [StagedFile] {
    &STAGED
}

const STAGED: [StagedFile; 9] = [
    StagedFile {
        path: "adult/adult.data.gz",
        gz_bytes: 408_969,
        bytes: 3_974_305,
        sha256: "5b00264637dbfec36bdeaab5676b0b309ff9eb788d63554ca0a249491c86603d",
    },
    StagedFile {
        path: "adult/adult.test.gz",
        gz_bytes: 205_254,
        bytes: 2_003_153,
        sha256: "a2a9044bc167a35b2361efbabec64e89d69ce82d9790d2980119aac5fd7e9c05",
    },
    StagedFile {
        path: "adult/adult.names.gz",
        gz_bytes: 2_641,
        bytes: 5_229,
        sha256: "c248284c0b5de30c9e1958d6cdd168a34a654758b620e68f46aefa83fc0a576a",
    },
    StagedFile {
        path: "cod-rna/cod-rna.gz",
        gz_bytes: 430_361,
        bytes: 4_667_176,
        sha256: "65b7cc0689fc29bba5db8b50fab0b6446d985f4bf8f6f5dd474f7df8b2f1ab6c",
    },
    StagedFile {
        path: "cod-rna/cod-rna.t.gz",
        gz_bytes: 1_763_352,
        bytes: 21_344_555,
        sha256: "58cff16df896436b06343df78ccaef37a6979d819abbcadbec3cb16b93938df6",
    },
    StagedFile {
        path: "synthetic-L/synthetic-L_X.npy.gz",
        gz_bytes: 3_099_957,
        bytes: 3_200_128,
        sha256: "bf6768f2cfc0dfb47a49a6ae7958d4672532ec71b8e10a83e2e64f4562cdd81b",
    },
    StagedFile {
        path: "synthetic-L/synthetic-L_y.npy.gz",
        gz_bytes: 2_463,
        bytes: 80_128,
        sha256: "ec1c67dddd3dc05c6a89060e66aa948847cfae23085110b30f740c54668b2902",
    },
    StagedFile {
        path: "synthetic-H/synthetic-H_X.npy.gz",
        gz_bytes: 30_717_100,
        bytes: 32_000_128,
        sha256: "0d5f7b39042dcc1c72140dc377070dab05a374009f018ddb3c9c022a596055c4",
    },
    StagedFile {
        path: "synthetic-H/synthetic-H_y.npy.gz",
        gz_bytes: 663,
        bytes: 16_128,
        sha256: "7955f06852010dc4c3ea4867664f4ebae67a6f8a848b3f257c3d8c25760febce",
    },
];

/// A staged file that matched its recorded size and digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifiedFile {
    /// The file checked.
    pub path: PathBuf,
    /// Its decompressed size in bytes.
    pub bytes: u64,
    /// Its decompressed SHA-256, lowercase hex.
    pub sha256: String,
}

/// Check every file of shared/data/README.md's table under `data_dir`: the `.gz` size, then
/// the decompressed size and SHA-256. Decompresses about 67 MB, so the dataset loaders never
/// call it; run it once after staging the data.
///
/// # Errors
///
/// [`Error::Io`] for a missing or unreadable file; [`Error::Checksum`] for the first size or
/// digest that differs.
pub fn verify_checksums(data_dir: &Path) -> Result<Vec<VerifiedFile>> {
    let mut verified = Vec::with_capacity(STAGED.len());
    for file in &STAGED {
        let path = data_dir.join(file.path);
        let gz_bytes = std::fs::metadata(&path)
            .map_err(|e| Error::io(&path, e))?
            .len();
        if gz_bytes != file.gz_bytes {
            return Err(checksum_error(
                &path,
                "compressed size",
                file.gz_bytes.to_string(),
                gz_bytes.to_string(),
            ));
        }
        let mut reader = open(&path)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let k = match reader.read(&mut buf) {
                Ok(0) => break,
                Ok(k) => k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(&path, e)),
            };
            hasher.update(&buf[..k]);
        }
        let bytes = hasher.len;
        if bytes != file.bytes {
            return Err(checksum_error(
                &path,
                "uncompressed size",
                file.bytes.to_string(),
                bytes.to_string(),
            ));
        }
        let digest = to_hex(&hasher.finish());
        if digest != file.sha256 {
            return Err(checksum_error(
                &path,
                "sha256",
                file.sha256.to_owned(),
                digest,
            ));
        }
        verified.push(VerifiedFile {
            path,
            bytes,
            sha256: digest,
        });
    }
    Ok(verified)
}

fn checksum_error(path: &Path, what: &'static str, expected: String, found: String) -> Error {
    Error::Checksum {
        path: path.into(),
        what,
        expected,
        found,
    }
}

/// SHA-256 of `bytes` as lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut hasher = Sha256::new();
    hasher.update(bytes);
    to_hex(&hasher.finish())
}

fn to_hex(digest: &[u8; 32]) -> String {
    use std::fmt::Write;
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

const K: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// Streaming SHA-256 (FIPS 180-4).
struct Sha256 {
    state: [u32; 8],
    block: [u8; 64],
    filled: usize,
    /// Bytes hashed so far.
    len: u64,
}

impl Sha256 {
    fn new() -> Self {
        Self {
            state: [
                0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
                0x5be0cd19,
            ],
            block: [0; 64],
            filled: 0,
            len: 0,
        }
    }

    fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if self.filled > 0 {
            let take = (64 - self.filled).min(data.len());
            self.block[self.filled..self.filled + take].copy_from_slice(&data[..take]);
            self.filled += take;
            data = &data[take..];
            if self.filled < 64 {
                return;
            }
            let block = self.block;
            self.compress(&block);
            self.filled = 0;
        }
        let mut chunks = data.chunks_exact(64);
        for chunk in &mut chunks {
            let mut block = [0u8; 64];
            block.copy_from_slice(chunk);
            self.compress(&block);
        }
        let rest = chunks.remainder();
        self.block[..rest.len()].copy_from_slice(rest);
        self.filled = rest.len();
    }

    fn finish(mut self) -> [u8; 32] {
        let bit_len = self.len.wrapping_mul(8);
        let mut tail = [0u8; 128];
        tail[..self.filled].copy_from_slice(&self.block[..self.filled]);
        tail[self.filled] = 0x80;
        let total = if self.filled < 56 { 64 } else { 128 };
        tail[total - 8..total].copy_from_slice(&bit_len.to_be_bytes());
        for block in tail[..total].chunks_exact(64) {
            let mut b = [0u8; 64];
            b.copy_from_slice(block);
            self.compress(&b);
        }
        let mut out = [0u8; 32];
        for (o, s) in out.chunks_exact_mut(4).zip(self.state) {
            o.copy_from_slice(&s.to_be_bytes());
        }
        out
    }

    fn compress(&mut self, block: &[u8; 64]) {
        let mut w = [0u32; 64];
        for (wi, c) in w.iter_mut().zip(block.chunks_exact(4)) {
            *wi = u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        }
        for i in 16..64 {
            let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
            let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16]
                .wrapping_add(s0)
                .wrapping_add(w[i - 7])
                .wrapping_add(s1);
        }
        let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = self.state;
        for i in 0..64 {
            let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
            let ch = (e & f) ^ (!e & g);
            let t1 = h
                .wrapping_add(s1)
                .wrapping_add(ch)
                .wrapping_add(K[i])
                .wrapping_add(w[i]);
            let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
            let maj = (a & b) ^ (a & c) ^ (b & c);
            let t2 = s0.wrapping_add(maj);
            h = g;
            g = f;
            f = e;
            e = d.wrapping_add(t1);
            d = c;
            c = b;
            b = a;
            a = t1.wrapping_add(t2);
        }
        for (s, v) in self.state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
            *s = s.wrapping_add(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// FIPS 180-4 / NIST example vectors.
    #[test]
    fn sha256_test_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million_a = vec![b'a'; 1_000_000];
        assert_eq!(
            sha256_hex(&million_a),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn streaming_matches_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        let whole = sha256_hex(&data);
        for split in [0, 1, 55, 56, 63, 64, 65, 127, 128, 999] {
            let mut h = Sha256::new();
            h.update(&data[..split]);
            h.update(&data[split..]);
            assert_eq!(to_hex(&h.finish()), whole, "split at {split}");
        }
    }
}
