//! The import of one model: initializers and inputs to stored tensors, nodes in dependence
//! order through the op table, outputs marked in the graph's order.
//!
//! Assumes: a parsed `ModelProto`. Guarantees: the graph's placeholders are the model's inputs
//! that are not initializers, in order, named as ONNX names them; its outputs are the model's,
//! in order, each with its axes in ONNX's order; a node that reads a tensor nothing produces,
//! or a cycle, is an error naming the node.

use crate::context::Cx;
use crate::error::{At, ImportError};
use crate::naming::{InputAxes, Namer};
use crate::ops;
use crate::proto;
use crate::value::{Value, KNOWN_LIMIT};
use onnx_protobuf::{GraphProto, ModelProto, NodeProto, ValueInfoProto};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::rc::Rc;
use weft_ir::{ArrayData, Axis, DType, Graph, NodeId, TensorInit};

/// An imported model: the weft graph and how its tensors map to the model's.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The graph: placeholders for the model's inputs, outputs for its outputs.
    pub graph: Graph,
    /// The model's inputs (initializers excluded), in order: name and placeholder.
    pub inputs: Vec<(String, NodeId)>,
    /// The model's outputs, in order: name and node (its axes in ONNX's order).
    pub outputs: Vec<(String, NodeId)>,
    /// The default-domain opset the model imports.
    pub opset: i64,
}

/// The opsets weft reads (ONNX's default domain): 1 to 28 (ONNX 1.23's newest). Versions of an
/// op that changed its meaning are read as the model's opset says (e.g. `broadcast` and `axis`
/// before opset 7, `Softmax` before 13, attributes that became inputs); versions that only
/// added element types read alike.
pub const OPSETS: std::ops::RangeInclusive<i64> = 1..=28;

/// What an import may be told beyond the model.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Inputs whose values are fixed at import: each becomes a constant (and is no longer a
    /// placeholder), so shape arithmetic over it folds — an `axes`, `shape` or `pads` input a
    /// model takes at run time, specialised to one value.
    pub known_inputs: Vec<KnownInput>,
}

/// An input's value, fixed at import ([`ImportOptions::known_inputs`]).
#[derive(Clone, Debug)]
pub struct KnownInput {
    /// The input's name.
    pub name: String,
    /// Its dims.
    pub dims: Vec<usize>,
    /// Its elements, row-major; the dtype must be the input's.
    pub data: weft_ir::ArrayData,
}

pub(crate) fn import_model(
    model: &ModelProto,
    dir: Option<&Path>,
    path: &str,
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    let model_err = |message: String| ImportError::Model {
        path: path.to_string(),
        message,
    };
    let opset = model
        .opset_import
        .iter()
        .find(|o| o.domain.is_empty() || o.domain == "ai.onnx")
        .map(|o| o.version)
        // IR version 2 models predate opset_import and mean opset 1.
        .ok_or_else(|| model_err("the model imports no opset of the default ONNX domain".into()))?;
    if !OPSETS.contains(&opset) {
        return Err(model_err(format!(
            "the model imports opset {opset}; weft reads opsets {} to {}",
            OPSETS.start(),
            OPSETS.end()
        )));
    }
    let graph = model
        .graph
        .as_ref()
        .ok_or_else(|| model_err("the model has no graph".into()))?;
    let mut im = Importer {
        g: Graph::new(),
        namer: Namer::default(),
        values: HashMap::new(),
        opset,
        dir,
    };
    im.initializers(graph)?;
    let inputs = im.inputs(graph, options)?;
    for node in order(graph, &im.values)? {
        im.node(node)?;
    }
    let outputs = im.outputs(graph)?;
    Ok(Imported {
        graph: im.g,
        inputs,
        outputs,
        opset,
    })
}

struct Importer<'m> {
    g: Graph,
    namer: Namer,
    values: HashMap<String, Value>,
    opset: i64,
    dir: Option<&'m Path>,
}

impl Importer<'_> {
    fn initializers(&mut self, graph: &GraphProto) -> Result<(), ImportError> {
        for t in &graph.initializer {
            let (dims, data) = proto::tensor_data(t, self.dir)?;
            self.constant(&t.name, ':', &dims, data)?;
        }
        Ok(())
    }

    fn inputs(
        &mut self,
        graph: &GraphProto,
        options: &ImportOptions,
    ) -> Result<Vec<(String, NodeId)>, ImportError> {
        let mut names = InputAxes::new(graph);
        let mut out = Vec::new();
        for known in &options.known_inputs {
            if !graph.input.iter().any(|i| i.name == known.name) {
                return Err(ImportError::Tensor {
                    tensor: known.name.clone(),
                    message: "a known input's value was given, but the model has no such input"
                        .into(),
                });
            }
        }
        for input in &graph.input {
            if self.values.contains_key(&input.name) {
                continue; // an initializer listed as an input (IR < 4): its value is fixed
            }
            let (dtype, dims) = input_type(input)?;
            if let Some(known) = options.known_inputs.iter().find(|k| k.name == input.name) {
                self.known_input(known, dtype, &dims)?;
                continue;
            }
            let axes = names.axes(&mut self.g, &mut self.namer, &input.name, &dims);
            let node =
                self.g
                    .placeholder(&input.name, &axes, dtype)
                    .map_err(|e| ImportError::Tensor {
                        tensor: input.name.clone(),
                        message: e.to_string(),
                    })?;
            self.values.insert(
                input.name.clone(),
                Value {
                    node,
                    axes,
                    dtype,
                    known: None,
                },
            );
            out.push((input.name.clone(), node));
        }
        Ok(out)
    }

    /// Input `known` as a constant, checked against the model's declaration of it.
    fn known_input(
        &mut self,
        known: &KnownInput,
        dtype: DType,
        dims: &[Result<usize, String>],
    ) -> Result<(), ImportError> {
        let err = |message: String| ImportError::Tensor {
            tensor: known.name.clone(),
            message,
        };
        if known.data.dtype() != dtype {
            return Err(err(format!(
                "the known value is {} but the input is {dtype}",
                known.data.dtype()
            )));
        }
        let fits = known.dims.len() == dims.len()
            && known
                .dims
                .iter()
                .zip(dims)
                .all(|(k, d)| d.as_ref().map_or(true, |d| d == k));
        if !fits || known.dims.iter().product::<usize>() != known.data.len() {
            return Err(err(format!(
                "the known value has dims {:?} ({} elements), which the input's declared dims do not allow",
                known.dims,
                known.data.len()
            )));
        }
        self.constant(&known.name, '_', &known.dims, known.data.clone())
    }

    /// Tensor `name` as a constant over new axes `<name><sep><i>`, its elements kept as known
    /// data when small: an initializer, or an input fixed at import.
    fn constant(
        &mut self,
        name: &str,
        sep: char,
        dims: &[usize],
        data: ArrayData,
    ) -> Result<(), ImportError> {
        let axes: Vec<Axis> = dims
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let label = self.namer.unique(&format!("{name}{sep}{i}"));
                self.g.axis_labelled(&label, Some(*n), Vec::new())
            })
            .collect();
        let dtype = data.dtype();
        let known = (data.len() <= KNOWN_LIMIT).then(|| Rc::new(data.clone()));
        let node_name = (self.g.find(name).is_none() && !name.is_empty()).then_some(name);
        let node = self
            .g
            .constant(node_name, &axes, dtype, TensorInit::data(data))
            .map_err(|e| ImportError::Tensor {
                tensor: name.to_string(),
                message: e.to_string(),
            })?;
        let value = Value {
            node,
            axes,
            dtype,
            known,
        };
        self.values.insert(name.to_string(), value);
        Ok(())
    }

    fn at(&self, node: &NodeProto) -> At {
        At {
            node: node_label(node),
            op: node.op_type.clone(),
            opset: self.opset,
        }
    }

    fn node(&mut self, node: &NodeProto) -> Result<(), ImportError> {
        let at = self.at(node);
        if !(node.domain.is_empty() || node.domain == "ai.onnx") {
            return Err(ImportError::UnsupportedOp {
                at,
                domain: node.domain.clone(),
            });
        }
        let mut inputs = Vec::with_capacity(node.input.len());
        for name in &node.input {
            if name.is_empty() {
                inputs.push(None);
                continue;
            }
            let v = self
                .values
                .get(name)
                .ok_or_else(|| ImportError::MissingInput {
                    at: at.clone(),
                    input: name.clone(),
                })?;
            inputs.push(Some(v.clone()));
        }
        let mut cx = Cx {
            g: &mut self.g,
            node,
            at: at.clone(),
            inputs,
            namer: &mut self.namer,
        };
        let results = ops::import(&mut cx)?;
        for (name, v) in node.output.iter().zip(results) {
            if name.is_empty() {
                continue;
            }
            let fresh = self.g.node(v.node).name.is_none() && self.g.find(name).is_none();
            if fresh {
                // Names the node after the tensor, so explain and the dumps read as the model.
                let _ = self.g.set_name(v.node, name);
            }
            self.values.insert(name.clone(), v);
        }
        Ok(())
    }

    fn outputs(&mut self, graph: &GraphProto) -> Result<Vec<(String, NodeId)>, ImportError> {
        let mut out = Vec::new();
        for o in &graph.output {
            let v = self
                .values
                .get(&o.name)
                .cloned()
                .ok_or_else(|| ImportError::Tensor {
                    tensor: o.name.clone(),
                    message: "a graph output that no node, input or initializer produces".into(),
                })?;
            let mut node = v.node;
            if self.g.node(node).axes.as_slice() != v.axes.as_slice() {
                node = self
                    .g
                    .axes_with_order(node, &v.axes)
                    .map_err(|e| ImportError::Tensor {
                        tensor: o.name.clone(),
                        message: e.to_string(),
                    })?;
                if self.g.find(&o.name).is_none() {
                    let _ = self.g.set_name(node, &o.name);
                }
            }
            self.g.mark_output(node).map_err(|e| ImportError::Tensor {
                tensor: o.name.clone(),
                message: e.to_string(),
            })?;
            out.push((o.name.clone(), node));
        }
        Ok(out)
    }
}

/// A node's name for messages: its own, or its first output's.
pub fn node_label(node: &NodeProto) -> String {
    if !node.name.is_empty() {
        node.name.clone()
    } else {
        format!(
            "output {}",
            node.output.first().map(String::as_str).unwrap_or("?")
        )
    }
}

/// An input's dtype and dims (`Err(name)` for a symbolic dim, `Ok(len)` for a fixed one).
fn input_type(input: &ValueInfoProto) -> Result<(DType, Vec<Result<usize, String>>), ImportError> {
    let err = |message: String| ImportError::Tensor {
        tensor: input.name.clone(),
        message,
    };
    let ty = input
        .type_
        .as_ref()
        .and_then(|t| match &t.value {
            Some(onnx_protobuf::type_proto::Value::TensorType(tt)) => Some(tt),
            _ => None,
        })
        .ok_or_else(|| err("a graph input that is not a tensor (weft takes tensors)".into()))?;
    let dtype = proto::dtype_of(ty.elem_type).ok_or_else(|| {
        err(format!(
            "element type {} has no weft dtype (weft has f32, f64, i32, i64 and bool)",
            proto::type_name(ty.elem_type)
        ))
    })?;
    let shape = ty.shape.as_ref().ok_or_else(|| {
        err("the input's rank is not given; weft needs every input's rank".into())
    })?;
    let dims = shape
        .dim
        .iter()
        .enumerate()
        .map(|(i, d)| {
            if d.has_dim_value() && d.dim_value() >= 0 {
                Ok(d.dim_value() as usize)
            } else if d.has_dim_param() && !d.dim_param().is_empty() {
                Err(d.dim_param().to_string())
            } else {
                Err(format!("{}_{i}", input.name))
            }
        })
        .collect();
    Ok((dtype, dims))
}

/// The nodes in an order where each reads only tensors made before it (the model's order
/// when it is one, as ONNX requires; otherwise sorted), or the cycle that prevents one.
fn order<'g>(
    graph: &'g GraphProto,
    values: &HashMap<String, Value>,
) -> Result<Vec<&'g NodeProto>, ImportError> {
    let mut made: HashSet<&str> = values.keys().map(String::as_str).collect();
    for i in &graph.input {
        made.insert(&i.name);
    }
    let producer: HashMap<&str, usize> = graph
        .node
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.output.iter().map(move |o| (o.as_str(), i)))
        .collect();
    let mut done = vec![false; graph.node.len()];
    let mut out = Vec::with_capacity(graph.node.len());
    loop {
        let before = out.len();
        for (i, n) in graph.node.iter().enumerate() {
            if done[i] {
                continue;
            }
            let ready = n.input.iter().all(|x| {
                x.is_empty() || made.contains(x.as_str()) || !producer.contains_key(x.as_str())
            });
            if ready {
                done[i] = true;
                out.push(n);
                made.extend(n.output.iter().map(String::as_str));
            }
        }
        if out.len() == graph.node.len() {
            return Ok(out);
        }
        if out.len() == before {
            let stuck = graph
                .node
                .iter()
                .zip(&done)
                .find(|(_, d)| !**d)
                .map(|(n, _)| n);
            let n = stuck.expect("a node is left");
            return Err(ImportError::Cycle {
                node: node_label(n),
                op: n.op_type.clone(),
            });
        }
    }
}
