//! The op table: every ONNX op weft imports, in one list ([`SUPPORTED`]), and the dispatch
//! from a node to its import. An op not in the list is [`ImportError::UnsupportedOp`].

pub mod elementwise;
pub mod fold;
pub mod linalg;
pub mod nn;
pub mod reduce;
pub mod shape;

use crate::context::Cx;
use crate::error::ImportError;
use crate::value::Value;
use weft_ir::{PoolKind, ReduceOp};

/// Every op weft imports (default domain), sorted.
pub const SUPPORTED: &[&str] = &[
    "Abs",
    "Add",
    "ArgMax",
    "ArgMin",
    "AveragePool",
    "BatchNormalization",
    "Cast",
    "Clip",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Conv",
    "Cos",
    "Div",
    "Dropout",
    "Elu",
    "Equal",
    "Erf",
    "Exp",
    "Expand",
    "Flatten",
    "Gather",
    "Gelu",
    "Gemm",
    "GlobalAveragePool",
    "GlobalMaxPool",
    "Greater",
    "GreaterOrEqual",
    "HardSigmoid",
    "Identity",
    "LRN",
    "LayerNormalization",
    "LeakyRelu",
    "Less",
    "LessOrEqual",
    "Log",
    "LogSoftmax",
    "MatMul",
    "Max",
    "MaxPool",
    "Mean",
    "Min",
    "Mul",
    "Neg",
    "Not",
    "Pad",
    "Pow",
    "Reciprocal",
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
    "Relu",
    "Reshape",
    "Shape",
    "Sigmoid",
    "Sign",
    "Sin",
    "Size",
    "Slice",
    "Softmax",
    "Softplus",
    "Split",
    "Sqrt",
    "Squeeze",
    "Sub",
    "Sum",
    "Tanh",
    "Transpose",
    "Unsqueeze",
    "Where",
];

/// The node's outputs, in order.
pub fn import(cx: &mut Cx) -> Result<Vec<Value>, ImportError> {
    let op = cx.at.op.clone();
    let one = |v: Value| Ok(vec![v]);
    if let Some(u) = elementwise::unary_op(&op) {
        let x = cx.input(0)?;
        return one(elementwise::unary(cx, u, &x)?);
    }
    if let Some(b) = elementwise::binary_op(&op) {
        let (x, y) = elementwise::legacy_operands(cx)?;
        return one(elementwise::binary(cx, b, &x, &y)?);
    }
    if let Some(c) = elementwise::compare_op(&op) {
        let (x, y) = elementwise::legacy_operands(cx)?;
        return one(elementwise::compare(cx, c, &x, &y)?);
    }
    match op.as_str() {
        "Sum" | "Max" | "Min" | "Mean" => one(elementwise::variadic(cx, &op)?),
        "Where" => one(elementwise::where_(cx)?),
        "Not" => one(elementwise::not(cx)?),
        "Clip" => one(elementwise::clip(cx)?),
        "LeakyRelu" => one(elementwise::leaky_relu(cx)?),
        "Elu" => one(elementwise::elu(cx)?),
        "Softplus" => one(elementwise::softplus(cx)?),
        "HardSigmoid" => one(elementwise::hard_sigmoid(cx)?),
        "Erf" => one(elementwise::erf(cx)?),
        "Gelu" => one(elementwise::gelu(cx)?),
        "Cast" => one(elementwise::cast(cx)?),
        "Constant" => one(shape::constant(cx)?),
        "ConstantOfShape" => one(shape::constant_of_shape(cx)?),
        "Shape" => one(shape::shape(cx)?),
        "Size" => one(shape::size(cx)?),
        "Identity" | "Dropout" => shape::identity(cx),
        "Reshape" => one(shape::reshape(cx)?),
        "Flatten" => one(shape::flatten(cx)?),
        "Transpose" => one(shape::transpose(cx)?),
        "Unsqueeze" => one(shape::unsqueeze(cx)?),
        "Squeeze" => one(shape::squeeze(cx)?),
        "Concat" => one(shape::concat(cx)?),
        "Slice" => one(shape::slice(cx)?),
        "Gather" => one(shape::gather(cx)?),
        "Split" => shape::split(cx),
        "Pad" => one(shape::pad(cx)?),
        "Expand" => one(shape::expand(cx)?),
        "Conv" => one(nn::conv(cx)?),
        "MaxPool" => one(nn::pool(cx, PoolKind::Max)?),
        "AveragePool" => one(nn::pool(cx, PoolKind::Avg)?),
        "GlobalAveragePool" => one(nn::global_pool(cx, ReduceOp::Mean)?),
        "GlobalMaxPool" => one(nn::global_pool(cx, ReduceOp::Max)?),
        "BatchNormalization" => one(nn::batch_norm(cx)?),
        "LRN" => one(nn::lrn(cx)?),
        "Softmax" => one(nn::softmax(cx, false)?),
        "LogSoftmax" => one(nn::softmax(cx, true)?),
        "LayerNormalization" => nn::layer_norm(cx),
        "Gemm" => one(linalg::gemm(cx)?),
        "MatMul" => one(linalg::matmul(cx)?),
        "ArgMax" => one(reduce::arg(cx, ReduceOp::ArgMax)?),
        "ArgMin" => one(reduce::arg(cx, ReduceOp::ArgMin)?),
        r if r.starts_with("Reduce") && SUPPORTED.contains(&r) => one(reduce::reduce(cx, r)?),
        _ => Err(ImportError::UnsupportedOp {
            at: cx.at.clone(),
            domain: String::new(),
        }),
    }
}
