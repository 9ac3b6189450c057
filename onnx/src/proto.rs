//! Reading the ONNX messages: tensor data (inline, raw or external) into weft's host arrays,
//! element types into dtypes, and a node's attributes by name.
//!
//! Assumes: messages parsed by `onnx-protobuf` (onnx.proto, IR version ≤ 11).
//! Guarantees: a tensor's element count is checked against its dims (with overflow) before
//! any data is read; external data is read only from files inside the model's directory.

use crate::error::{At, ImportError};
use onnx_protobuf::{attribute_proto::AttributeType, AttributeProto, NodeProto, TensorProto};
use std::path::Path;
use weft_ir::{ArrayData, DType};

/// ONNX's `TensorProto.DataType` codes weft reads.
pub const FLOAT: i32 = 1;
const UINT8: i32 = 2;
const INT8: i32 = 3;
const INT16: i32 = 5;
/// `INT32`.
pub const INT32: i32 = 6;
/// `INT64`.
pub const INT64: i32 = 7;
/// `BOOL`.
pub const BOOL: i32 = 9;
/// `DOUBLE`.
pub const DOUBLE: i32 = 11;

/// The weft dtype of an ONNX element type, if weft has one.
pub fn dtype_of(code: i32) -> Option<DType> {
    match code {
        FLOAT => Some(DType::F32),
        DOUBLE => Some(DType::F64),
        INT32 => Some(DType::I32),
        INT64 => Some(DType::I64),
        BOOL => Some(DType::Bool),
        _ => None,
    }
}

/// The element type code of an ONNX type name (`"FLOAT"`, …: `Cast`'s `to` before opset 6);
/// 0 (UNDEFINED) for a name weft does not know.
pub fn code_named(name: &str) -> i32 {
    (0..=16).find(|c| type_name(*c) == name).unwrap_or(0)
}

/// The name ONNX gives an element type code (for messages).
pub fn type_name(code: i32) -> String {
    let name = match code {
        0 => "UNDEFINED",
        FLOAT => "FLOAT",
        UINT8 => "UINT8",
        INT8 => "INT8",
        4 => "UINT16",
        INT16 => "INT16",
        INT32 => "INT32",
        INT64 => "INT64",
        8 => "STRING",
        BOOL => "BOOL",
        10 => "FLOAT16",
        DOUBLE => "DOUBLE",
        12 => "UINT32",
        13 => "UINT64",
        14 => "COMPLEX64",
        15 => "COMPLEX128",
        16 => "BFLOAT16",
        _ => return format!("element type {code}"),
    };
    name.to_string()
}

/// A tensor's dims as lengths, and their product, checked.
pub fn dims_of(t: &TensorProto) -> Result<(Vec<usize>, usize), ImportError> {
    let err = |message: String| ImportError::Tensor {
        tensor: t.name.clone(),
        message,
    };
    let mut dims = Vec::with_capacity(t.dims.len());
    let mut count = 1usize;
    for d in &t.dims {
        let d = usize::try_from(*d).map_err(|_| err(format!("negative dim {d}")))?;
        count = count
            .checked_mul(d)
            .filter(|c| *c <= weft_ir::size::MAX_TENSOR_BYTES)
            .ok_or_else(|| err(format!("dims {:?} hold more elements than fit", t.dims)))?;
        dims.push(d);
    }
    Ok((dims, count))
}

/// A tensor's elements as weft host data, with its dims. `dir` is the model's directory, for
/// external data (`None`: a model read from bytes, which may not have any).
pub fn tensor_data(
    t: &TensorProto,
    dir: Option<&Path>,
) -> Result<(Vec<usize>, ArrayData), ImportError> {
    let (dims, count) = dims_of(t)?;
    let err = |message: String| ImportError::Tensor {
        tensor: t.name.clone(),
        message,
    };
    let dtype = dtype_of(t.data_type).ok_or_else(|| {
        err(format!(
            "element type {} has no weft dtype (weft has f32, f64, i32, i64 and bool)",
            type_name(t.data_type)
        ))
    })?;
    let external = t.data_location.value() == 1;
    let raw: Option<Vec<u8>> = if external {
        Some(read_external(t, dir, count, dtype)?)
    } else if !t.raw_data.is_empty() {
        Some(t.raw_data.clone())
    } else {
        None
    };
    let data = match raw {
        Some(bytes) => from_raw(&bytes, dtype, count).map_err(err)?,
        None => from_typed(t, dtype),
    };
    let got = data.len();
    if got != count {
        return Err(err(format!(
            "dims {:?} make {count} elements but the data holds {got}",
            t.dims
        )));
    }
    Ok((dims, data))
}

fn from_typed(t: &TensorProto, dtype: DType) -> ArrayData {
    match dtype {
        DType::F32 => ArrayData::F32(t.float_data.clone()),
        DType::F64 => ArrayData::F64(t.double_data.clone()),
        DType::I32 => ArrayData::I32(t.int32_data.clone()),
        DType::I64 => ArrayData::I64(t.int64_data.clone()),
        DType::Bool => ArrayData::Bool(t.int32_data.iter().map(|v| *v != 0).collect()),
    }
}

fn from_raw(bytes: &[u8], dtype: DType, count: usize) -> Result<ArrayData, String> {
    let width = match dtype {
        DType::Bool => 1,
        DType::F32 | DType::I32 => 4,
        DType::F64 | DType::I64 => 8,
    };
    if bytes.len() != count * width {
        return Err(format!(
            "raw data of {} bytes for {count} elements of {width} bytes",
            bytes.len()
        ));
    }
    let chunks = |n: usize| bytes.chunks_exact(n);
    Ok(match dtype {
        DType::F32 => ArrayData::F32(
            chunks(4)
                .map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect(),
        ),
        DType::F64 => ArrayData::F64(
            chunks(8)
                .map(|c| f64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        ),
        DType::I32 => ArrayData::I32(
            chunks(4)
                .map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect(),
        ),
        DType::I64 => ArrayData::I64(
            chunks(8)
                .map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes")))
                .collect(),
        ),
        DType::Bool => ArrayData::Bool(bytes.iter().map(|b| *b != 0).collect()),
    })
}

/// External data (`data_location: EXTERNAL`): `location`, `offset` and `length` entries, the
/// file relative to the model's directory and inside it.
fn read_external(
    t: &TensorProto,
    dir: Option<&Path>,
    count: usize,
    dtype: DType,
) -> Result<Vec<u8>, ImportError> {
    let entry = |key: &str| {
        t.external_data
            .iter()
            .find(|e| e.key == key)
            .map(|e| e.value.clone())
    };
    let location = entry("location").unwrap_or_default();
    let err = |message: String| ImportError::ExternalData {
        tensor: t.name.clone(),
        location: location.clone(),
        message,
    };
    let dir =
        dir.ok_or_else(|| err("a model read from bytes has no directory to read it from".into()))?;
    let rel = Path::new(&location);
    if location.is_empty()
        || rel.is_absolute()
        || rel
            .components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err(err(
            "the location must be a relative path inside the model's directory".into(),
        ));
    }
    let number = |key: &str| -> Result<Option<u64>, ImportError> {
        entry(key)
            .map(|v| {
                v.parse::<u64>()
                    .map_err(|_| err(format!("{key} `{v}` is not a number")))
            })
            .transpose()
    };
    let offset = number("offset")?.unwrap_or(0);
    let width = if dtype == DType::Bool {
        1
    } else {
        dtype.size_bytes()
    };
    let expected = (count * width) as u64;
    let length = number("length")?.unwrap_or(expected);
    if length != expected {
        return Err(err(format!(
            "length {length} but the dims make {expected} bytes"
        )));
    }
    use std::io::{Read, Seek, SeekFrom};
    let path = dir.join(rel);
    let mut file =
        std::fs::File::open(&path).map_err(|e| err(format!("{}: {e}", path.display())))?;
    // The file must hold the bytes before any are allocated: dims alone never allocate.
    let file_len = file.metadata().map_err(|e| err(e.to_string()))?.len();
    if offset
        .checked_add(expected)
        .is_none_or(|end| end > file_len)
    {
        return Err(err(format!(
            "{expected} bytes at offset {offset} are past the end of the file ({file_len} bytes)"
        )));
    }
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| err(e.to_string()))?;
    let mut bytes = vec![0u8; expected as usize];
    file.read_exact(&mut bytes)
        .map_err(|e| err(format!("{} bytes at offset {offset}: {e}", expected)))?;
    Ok(bytes)
}

/// A node's attributes, read by name with the node named in every error.
pub struct Attrs<'n> {
    node: &'n NodeProto,
    at: At,
}

impl<'n> Attrs<'n> {
    /// The attributes of `node`.
    pub fn new(node: &'n NodeProto, at: At) -> Attrs<'n> {
        Attrs { node, at }
    }

    fn get(&self, name: &str) -> Option<&'n AttributeProto> {
        self.node.attribute.iter().find(|a| a.name == name)
    }

    fn kind_err(&self, name: &str, want: &str) -> ImportError {
        ImportError::Malformed {
            at: self.at.clone(),
            message: format!("attribute `{name}` is not {want}"),
        }
    }

    /// Whether the node has attribute `name`.
    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// An integer attribute, or `default`.
    pub fn int(&self, name: &str, default: i64) -> Result<i64, ImportError> {
        match self.get(name) {
            None => Ok(default),
            Some(a) if a.type_.value() == AttributeType::INT as i32 => Ok(a.i),
            Some(_) => Err(self.kind_err(name, "an integer")),
        }
    }

    /// A float attribute, or `default`.
    pub fn float(&self, name: &str, default: f32) -> Result<f32, ImportError> {
        match self.get(name) {
            None => Ok(default),
            Some(a) if a.type_.value() == AttributeType::FLOAT as i32 => Ok(a.f),
            Some(_) => Err(self.kind_err(name, "a float")),
        }
    }

    /// An integer-list attribute, if present.
    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, ImportError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) if a.type_.value() == AttributeType::INTS as i32 => Ok(Some(a.ints.clone())),
            Some(_) => Err(self.kind_err(name, "a list of integers")),
        }
    }

    /// A float-list attribute, if present.
    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>, ImportError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) if a.type_.value() == AttributeType::FLOATS as i32 => {
                Ok(Some(a.floats.clone()))
            }
            Some(_) => Err(self.kind_err(name, "a list of floats")),
        }
    }

    /// A string attribute, or `default`.
    pub fn string(&self, name: &str, default: &str) -> Result<String, ImportError> {
        match self.get(name) {
            None => Ok(default.to_string()),
            Some(a) if a.type_.value() == AttributeType::STRING as i32 => {
                Ok(String::from_utf8_lossy(&a.s).into_owned())
            }
            Some(_) => Err(self.kind_err(name, "a string")),
        }
    }

    /// A tensor attribute, if present.
    pub fn tensor(&self, name: &str) -> Result<Option<&'n TensorProto>, ImportError> {
        match self.get(name) {
            None => Ok(None),
            Some(a) if a.type_.value() == AttributeType::TENSOR as i32 => match a.t.as_ref() {
                Some(t) => Ok(Some(t)),
                None => Err(self.kind_err(name, "a tensor (it holds none)")),
            },
            Some(_) => Err(self.kind_err(name, "a tensor")),
        }
    }
}
