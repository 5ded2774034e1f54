//! An object held packed: its value written out in a compact form, read back whole when it
//! is printed. A built object as a `Value` takes several times the bytes of its manifest
//! (an allocation for each string, list and mapping, each mapping's index of its keys), and
//! `build` holds every object of an environment until it is built. Packed, an object is
//! one allocation of about the size of its manifest.
//!
//! The form: each value led by a tag byte; numbers as serde_json holds them (unsigned,
//! negative or float), so that they read back to the same `Number` and print as they did;
//! strings, lists and mappings led by their lengths; a mapping's keys in their order, the
//! common ones of Kubernetes objects as their place in `KEYS`. A pack is read back only
//! where it was written, by the same program: the form is kept nowhere.

use serde_json::{Map, Number, Value};

/// A value packed (`Packed::of`), read back by `Packed::value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed(Box<[u8]>);

const NULL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
/// A `u64`, as a varint.
const UNSIGNED: u8 = 3;
/// A negative `i64` `n`, as the varint of `-(n + 1)`.
const NEGATIVE: u8 = 4;
/// An `f64`, its eight bytes little-endian.
const FLOAT: u8 = 5;
/// A string, its length as a varint.
const STRING: u8 = 6;
/// A list, its length as a varint.
const LIST: u8 = 7;
/// A mapping, its length as a varint, then each key (see `key`) and value.
const MAPPING: u8 = 8;
/// A string of up to `255 - SHORT` bytes: its length is the tag less `SHORT`.
const SHORT: u8 = 16;

/// Keys written as their place here (`key`): those most Kubernetes objects have, sorted
/// (`key` finds them by binary search).
const KEYS: &[&str] = &[
    "accessModes",
    "add",
    "affinity",
    "allowPrivilegeEscalation",
    "annotations",
    "apiVersion",
    "app",
    "app.kubernetes.io/component",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/name",
    "app.kubernetes.io/part-of",
    "args",
    "backend",
    "capabilities",
    "chart",
    "claimName",
    "command",
    "configMap",
    "configMapKeyRef",
    "configMapRef",
    "containerPort",
    "containers",
    "cpu",
    "data",
    "dependsOn",
    "drop",
    "effect",
    "emptyDir",
    "env",
    "envFrom",
    "finalizers",
    "fsGroup",
    "generation",
    "host",
    "hostPath",
    "hosts",
    "http",
    "httpGet",
    "image",
    "imagePullPolicy",
    "initContainers",
    "initialDelaySeconds",
    "interval",
    "items",
    "key",
    "kind",
    "labels",
    "limits",
    "livenessProbe",
    "matchLabels",
    "memory",
    "metadata",
    "mode",
    "mountPath",
    "name",
    "namespace",
    "nodeSelector",
    "number",
    "operator",
    "ownerReferences",
    "path",
    "pathType",
    "paths",
    "periodSeconds",
    "persistentVolumeClaim",
    "port",
    "ports",
    "postBuild",
    "protocol",
    "prune",
    "readOnly",
    "readOnlyRootFilesystem",
    "readinessProbe",
    "ref",
    "replicas",
    "requests",
    "resources",
    "rules",
    "runAsGroup",
    "runAsNonRoot",
    "runAsUser",
    "secret",
    "secretKeyRef",
    "secretName",
    "secretRef",
    "securityContext",
    "selector",
    "service",
    "serviceAccountName",
    "serviceName",
    "sourceRef",
    "spec",
    "startupProbe",
    "status",
    "storage",
    "storageClassName",
    "strategy",
    "stringData",
    "subPath",
    "substitute",
    "substituteFrom",
    "targetPort",
    "template",
    "tls",
    "tolerations",
    "type",
    "url",
    "value",
    "valueFrom",
    "values",
    "version",
    "volumeClaimTemplates",
    "volumeMounts",
    "volumes",
];

impl Packed {
    /// `v` packed.
    pub fn of(v: &Value) -> Packed {
        let mut out = Vec::with_capacity(256);
        write(&mut out, v);
        Packed(out.into_boxed_slice())
    }

    /// The value packed, as it was (its keys in their order, its numbers as they were).
    /// (`None` only if the bytes were not written by `of`, which the module's tests rule out.)
    pub fn value(&self) -> Option<Value> {
        let mut at = 0;
        let v = read(&self.0, &mut at)?;
        (at == self.0.len()).then_some(v)
    }
}

fn varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn text(out: &mut Vec<u8>, s: &str) {
    varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

/// A key: its place in `KEYS`, or `KEYS.len()` more than its length, then its bytes.
fn key(out: &mut Vec<u8>, k: &str) {
    match KEYS.binary_search(&k) {
        Ok(at) => varint(out, at as u64),
        Err(_) => {
            varint(out, (KEYS.len() + k.len()) as u64);
            out.extend_from_slice(k.as_bytes());
        }
    }
}

fn write(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Null => out.push(NULL),
        Value::Bool(false) => out.push(FALSE),
        Value::Bool(true) => out.push(TRUE),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                out.push(UNSIGNED);
                varint(out, u);
            } else if let Some(i) = n.as_i64() {
                out.push(NEGATIVE);
                // `i` is negative here (a non-negative one is a `u64` above).
                varint(out, !(i as u64));
            } else {
                out.push(FLOAT);
                out.extend_from_slice(&n.as_f64().unwrap_or(0.0).to_le_bytes());
            }
        }
        Value::String(s) => match u8::try_from(s.len()) {
            Ok(len) if len <= u8::MAX - SHORT => {
                out.push(SHORT + len);
                out.extend_from_slice(s.as_bytes());
            }
            _ => {
                out.push(STRING);
                text(out, s);
            }
        },
        Value::Array(items) => {
            out.push(LIST);
            varint(out, items.len() as u64);
            items.iter().for_each(|item| write(out, item));
        }
        Value::Object(map) => {
            out.push(MAPPING);
            varint(out, map.len() as u64);
            for (k, v) in map {
                key(out, k);
                write(out, v);
            }
        }
    }
}

fn byte(b: &[u8], at: &mut usize) -> Option<u8> {
    let v = *b.get(*at)?;
    *at += 1;
    Some(v)
}

fn read_varint(b: &[u8], at: &mut usize) -> Option<u64> {
    let mut n = 0u64;
    for shift in (0..64).step_by(7) {
        let v = byte(b, at)?;
        n |= u64::from(v & 0x7f) << shift;
        if v < 0x80 {
            return Some(n);
        }
    }
    None
}

fn bytes<'a>(b: &'a [u8], at: &mut usize, len: usize) -> Option<&'a [u8]> {
    let v = b.get(*at..at.checked_add(len)?)?;
    *at += len;
    Some(v)
}

fn string(b: &[u8], at: &mut usize, len: usize) -> Option<String> {
    String::from_utf8(bytes(b, at, len)?.to_vec()).ok()
}

fn length(b: &[u8], at: &mut usize) -> Option<usize> {
    usize::try_from(read_varint(b, at)?).ok()
}

fn read(b: &[u8], at: &mut usize) -> Option<Value> {
    Some(match byte(b, at)? {
        NULL => Value::Null,
        FALSE => Value::Bool(false),
        TRUE => Value::Bool(true),
        UNSIGNED => Value::Number(read_varint(b, at)?.into()),
        NEGATIVE => Value::Number((!read_varint(b, at)? as i64).into()),
        FLOAT => {
            let raw: [u8; 8] = bytes(b, at, 8)?.try_into().ok()?;
            Value::Number(Number::from_f64(f64::from_le_bytes(raw))?)
        }
        STRING => {
            let len = length(b, at)?;
            Value::String(string(b, at, len)?)
        }
        LIST => {
            let len = length(b, at)?;
            // Each item takes a byte at least: a length past the bytes left is not a pack.
            let mut items = Vec::with_capacity(len.min(b.len() - *at));
            for _ in 0..len {
                items.push(read(b, at)?);
            }
            Value::Array(items)
        }
        MAPPING => {
            let len = length(b, at)?;
            let mut map = Map::with_capacity(len.min(b.len() - *at));
            for _ in 0..len {
                let k = length(b, at)?;
                let k = match KEYS.get(k) {
                    Some(known) => (*known).to_string(),
                    None => string(b, at, k - KEYS.len())?,
                };
                let v = read(b, at)?;
                map.insert(k, v);
            }
            Value::Object(map)
        }
        tag if tag >= SHORT => Value::String(string(b, at, usize::from(tag - SHORT))?),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `v` reads back as it was: equal, and printing the same (which tells key order and
    /// each number's form, as `==` does not).
    fn round_trips(v: &Value) {
        let packed = Packed::of(v);
        let back = packed.value().unwrap();
        assert_eq!(&back, v);
        assert_eq!(
            serde_json::to_string(&back).unwrap(),
            serde_json::to_string(v).unwrap()
        );
    }

    #[test]
    fn the_common_keys_are_sorted_and_each_once() {
        assert!(KEYS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn every_kind_of_value_reads_back_as_it_was() {
        let long = "x".repeat(usize::from(u8::MAX - SHORT) + 1);
        let edge = "y".repeat(usize::from(u8::MAX - SHORT));
        round_trips(&json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"zeta": "1", "alpha": "2", "app": "b"}},
            "data": {"": "", "ünïcode ✓": "日本語", "long": long, "edge": edge},
            "numbers": [0, 1, 127, 128, 300, u64::MAX, -1, -128, i64::MIN, 0.5, -0.0, 1e300,
                        f64::MIN_POSITIVE, 3.0],
            "empties": [[], {}, "", null],
            "bools": [true, false],
            "nested": [[[[{"a": [{"b": null}]}]]]],
        }));
        for v in [
            json!(null),
            json!(true),
            json!(7),
            json!("s"),
            json!([]),
            json!({}),
        ] {
            round_trips(&v);
        }
    }

    #[test]
    fn keys_in_any_order_and_beyond_the_common_ones_keep_their_order() {
        let mut map = Map::new();
        for k in KEYS.iter().rev() {
            map.insert((*k).to_string(), json!(k.len()));
        }
        map.insert("not-a-common-key".into(), json!("v"));
        map.insert("apiVersion2".into(), json!("v"));
        let v = Value::Object(map);
        round_trips(&v);
        let keys: Vec<String> = Packed::of(&v)
            .value()
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        assert_eq!(keys.first().map(String::as_str), KEYS.last().copied());
        assert_eq!(keys.last().map(String::as_str), Some("apiVersion2"));
    }

    #[test]
    fn bytes_not_written_by_a_pack_read_as_none_not_a_panic() {
        let whole = Packed::of(&json!({"metadata": {"name": "a"}, "data": [1, "two"]}));
        for cut in 0..whole.0.len() {
            let part = Packed(whole.0[..cut].into());
            assert_eq!(part.value(), None, "cut at {cut}");
        }
        let mut more = whole.0.to_vec();
        more.push(NULL);
        assert_eq!(Packed(more.into()).value(), None);
        assert_eq!(Packed(vec![9].into()).value(), None);
        assert_eq!(
            Packed(vec![LIST, 0xff, 0xff, 0xff, 0xff, 0x0f].into()).value(),
            None
        );
    }

    #[test]
    fn a_manifest_packs_into_fewer_bytes_than_its_json() {
        let v = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "apps", "labels": {"app": "web"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}},
                                  "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                                           "ports": [{"containerPort": 80}]}]}}}
        });
        let (json, packed) = (
            serde_json::to_vec(&v).unwrap().len(),
            Packed::of(&v).0.len(),
        );
        assert!(packed * 2 < json, "{packed} bytes packed, {json} as JSON");
    }
}
