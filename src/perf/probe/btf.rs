//! The kernel's BTF (`/sys/kernel/btf/vmlinux`, Documentation/bpf/btf.rst): function prototypes, parameter
//! names and types, and struct member offsets, so that a kprobe at a function's entry can fetch its arguments
//! without the ~5 GB vmlinux DWARF. Arguments arrive in the System V x86-64 registers (di, si, dx, cx, r8, r9).

use super::location::TraceArg;
use super::spec::VarArg;
use std::path::{Path, PathBuf};

/// BTF errors.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The file can't be read.
    #[error("can't read BTF from {path}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Not BTF, or truncated.
    #[error("{path} is not valid BTF: {reason}")]
    Format {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FWD: u32 = 7;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// One BTF type.
#[derive(Clone, Debug)]
pub struct Type {
    /// BTF_KIND_*.
    pub kind: u32,
    /// Its name ("" when anonymous).
    pub name: String,
    /// Size in bytes (INT, STRUCT, UNION, ENUM) or the referenced type id (PTR, TYPEDEF, FUNC, ...).
    pub size_or_type: u32,
    /// INT: signed.
    pub signed: bool,
    /// STRUCT/UNION members (name, type, bit offset); FUNC_PROTO parameters (name, type, 0).
    pub members: Vec<(String, u32, u32)>,
}

/// A parsed BTF blob.
#[derive(Debug)]
pub struct Btf {
    types: Vec<Type>,
}

fn u32_at(d: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(off..off + 4)?.try_into().ok()?))
}

impl Btf {
    /// Reads and parses a BTF file (little-endian, as on x86-64).
    pub fn open(path: &Path) -> Result<Btf, Error> {
        let data = std::fs::read(path).map_err(|source| Error::Read {
            path: path.into(),
            source,
        })?;
        Btf::parse(&data).map_err(|reason| Error::Format {
            path: path.into(),
            reason,
        })
    }

    /// Parses a BTF blob.
    pub fn parse(d: &[u8]) -> Result<Btf, String> {
        if d.get(0..2) != Some(&[0x9f, 0xeb]) {
            return Err("no BTF magic 0xeb9f (little-endian)".into());
        }
        let hdr_len = u32_at(d, 4).ok_or("short header")? as usize;
        let type_off = u32_at(d, 8).ok_or("short header")? as usize;
        let type_len = u32_at(d, 12).ok_or("short header")? as usize;
        let str_off = u32_at(d, 16).ok_or("short header")? as usize;
        let str_len = u32_at(d, 20).ok_or("short header")? as usize;
        let strs = d
            .get(hdr_len + str_off..hdr_len + str_off + str_len)
            .ok_or("string section out of bounds")?;
        let name = |off: u32| -> String {
            let s = strs.get(off as usize..).unwrap_or_default();
            let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
            String::from_utf8_lossy(&s[..end]).into_owned()
        };
        let t = d
            .get(hdr_len + type_off..hdr_len + type_off + type_len)
            .ok_or("type section out of bounds")?;
        // Type id 0 is void.
        let mut types = vec![Type {
            kind: 0,
            name: "void".into(),
            size_or_type: 0,
            signed: false,
            members: Vec::new(),
        }];
        let mut p = 0;
        while p + 12 <= t.len() {
            let name_off = u32_at(t, p).ok_or("truncated type")?;
            let info = u32_at(t, p + 4).ok_or("truncated type")?;
            let size_or_type = u32_at(t, p + 8).ok_or("truncated type")?;
            p += 12;
            let kind = (info >> 24) & 0x1f;
            let vlen = (info & 0xffff) as usize;
            let kind_flag = info >> 31 == 1;
            let mut ty = Type {
                kind,
                name: name(name_off),
                size_or_type,
                signed: false,
                members: Vec::new(),
            };
            match kind {
                KIND_INT => {
                    let enc = u32_at(t, p).ok_or("truncated int")?;
                    ty.signed = (enc >> 24) & 1 == 1;
                    p += 4;
                }
                KIND_ARRAY => p += 12,
                KIND_STRUCT | KIND_UNION => {
                    for i in 0..vlen {
                        let m = p + i * 12;
                        let mname = name(u32_at(t, m).ok_or("truncated member")?);
                        let mtype = u32_at(t, m + 4).ok_or("truncated member")?;
                        let off = u32_at(t, m + 8).ok_or("truncated member")?;
                        let bit_off = if kind_flag { off & 0xff_ffff } else { off };
                        ty.members.push((mname, mtype, bit_off));
                    }
                    p += vlen * 12;
                }
                KIND_ENUM => p += vlen * 8,
                KIND_FUNC_PROTO => {
                    for i in 0..vlen {
                        let m = p + i * 8;
                        let pname = name(u32_at(t, m).ok_or("truncated parameter")?);
                        let ptype = u32_at(t, m + 4).ok_or("truncated parameter")?;
                        ty.members.push((pname, ptype, 0));
                    }
                    p += vlen * 8;
                }
                KIND_VAR | KIND_DECL_TAG => p += 4,
                KIND_DATASEC | KIND_ENUM64 => p += vlen * 12,
                KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT
                | KIND_FUNC | KIND_FLOAT | KIND_TYPE_TAG => {}
                other => return Err(format!("unknown BTF kind {other} at type {}", types.len())),
            }
            types.push(ty);
        }
        Ok(Btf { types })
    }

    /// A type by id.
    pub fn get(&self, id: u32) -> Option<&Type> {
        self.types.get(id as usize)
    }

    /// The id of the struct named `name` (the first one: the kernel's BTF has one per name).
    pub fn struct_id(&self, name: &str) -> Option<u32> {
        self.id_of(KIND_STRUCT, name)
    }

    /// The id of the variable named `name` (a per-CPU variable such as `runqueues` is one).
    pub fn var_id(&self, name: &str) -> Option<u32> {
        self.id_of(KIND_VAR, name)
    }

    fn id_of(&self, kind: u32, name: &str) -> Option<u32> {
        let at = self
            .types
            .iter()
            .position(|t| t.kind == kind && t.name == name)?;
        u32::try_from(at).ok()
    }

    /// The parameters (name, type id) of the function `name`.
    pub fn function_params(&self, name: &str) -> Option<Vec<(String, u32)>> {
        let func = self
            .types
            .iter()
            .find(|t| t.kind == KIND_FUNC && t.name == name)?;
        let proto = self.get(func.size_or_type)?;
        (proto.kind == KIND_FUNC_PROTO).then(|| {
            proto
                .members
                .iter()
                .map(|(n, t, _)| (n.clone(), *t))
                .collect()
        })
    }

    /// The type with typedefs, qualifiers and type tags stripped.
    pub fn resolve(&self, mut id: u32) -> Option<(u32, &Type)> {
        for _ in 0..32 {
            let t = self.get(id)?;
            match t.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.size_or_type
                }
                _ => return Some((id, t)),
            }
        }
        None
    }

    /// Size in bytes of a (resolved) type.
    pub fn size(&self, id: u32) -> Option<u32> {
        let (_, t) = self.resolve(id)?;
        match t.kind {
            KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_FLOAT => {
                Some(t.size_or_type)
            }
            KIND_PTR => Some(8),
            _ => None,
        }
    }

    /// A member of a struct or union (anonymous members searched through): byte offset and type.
    pub fn member(&self, id: u32, name: &str) -> Option<(u32, u32)> {
        let (_, t) = self.resolve(id)?;
        if t.kind != KIND_STRUCT && t.kind != KIND_UNION {
            return None;
        }
        for (mname, mtype, bit_off) in &t.members {
            if mname == name {
                return Some((bit_off / 8, *mtype));
            }
            if mname.is_empty() {
                if let Some((o, ty)) = self.member(*mtype, name) {
                    return Some((bit_off / 8 + o, ty));
                }
            }
        }
        None
    }

    /// The type as C spells it (`struct file *`, `size_t`).
    pub fn type_name(&self, id: u32) -> String {
        let Some(t) = self.get(id) else {
            return "?".into();
        };
        match t.kind {
            0 => "void".into(),
            KIND_PTR => format!("{} *", self.type_name(t.size_or_type)),
            KIND_CONST => format!("const {}", self.type_name(t.size_or_type)),
            KIND_VOLATILE => format!("volatile {}", self.type_name(t.size_or_type)),
            KIND_STRUCT => format!("struct {}", t.name),
            KIND_UNION => format!("union {}", t.name),
            KIND_ENUM | KIND_ENUM64 => format!("enum {}", t.name),
            KIND_TYPE_TAG | KIND_RESTRICT => self.type_name(t.size_or_type),
            _ => t.name.clone(),
        }
    }

    fn is_char(&self, id: u32) -> bool {
        self.resolve(id)
            .is_some_and(|(_, t)| t.kind == KIND_INT && t.size_or_type == 1)
    }
}

/// System V x86-64 integer argument registers, in order.
const ARG_REGS: [&str; 6] = ["di", "si", "dx", "cx", "r8", "r9"];

/// Translates a function-entry argument of `function` from BTF: the parameter's register, member accesses as
/// dereferences, and the type suffix.
pub fn translate_arg(btf: &Btf, function: &str, arg: &VarArg) -> Result<TraceArg, String> {
    let params = btf
        .function_params(function)
        .ok_or_else(|| format!("`{function}` has no function prototype in BTF"))?;
    let Some(index) = params.iter().position(|(n, _)| *n == arg.var) else {
        let names: Vec<&str> = params.iter().map(|(n, _)| n.as_str()).collect();
        return Err(format!(
            "`{}` is not a parameter of `{function}` (its parameters: {}); BTF has no local variables, give -k VMLINUX for those",
            arg.var,
            names.join(", ")
        ));
    };
    // Parameters wider than a register or passed in memory move the later ones; refuse rather than guess.
    for (n, t) in &params[..=index] {
        let size = btf.size(*t).unwrap_or(0);
        let scalar = btf.resolve(*t).is_some_and(|(_, ty)| {
            matches!(ty.kind, KIND_INT | KIND_PTR | KIND_ENUM | KIND_ENUM64)
        });
        if size > 8 || !scalar {
            return Err(format!(
                "parameter `{n}` of `{function}` is a `{}` ({size} bytes), not passed in one integer register; the registers of the parameters from it on can't be derived from BTF",
                btf.type_name(*t)
            ));
        }
    }
    if index >= ARG_REGS.len() {
        return Err(format!(
            "`{}` is parameter {} of `{function}`; parameters after the sixth are on the stack",
            arg.var,
            index + 1
        ));
    }
    let mut fetch = format!("%{}", ARG_REGS[index]);
    let mut ty = params[index].1;
    let mut what = arg.var.clone();
    let mut in_memory = false;
    for f in &arg.fields {
        let (_, t) = btf
            .resolve(ty)
            .ok_or_else(|| format!("`{what}` has no type"))?;
        let target = if f.arrow {
            if t.kind != KIND_PTR {
                return Err(format!(
                    "`{what}` is a `{}`, not a pointer",
                    btf.type_name(ty)
                ));
            }
            t.size_or_type
        } else {
            if !in_memory {
                return Err(format!("`{what}` is held in a register; use `->`"));
            }
            ty
        };
        let (off, mtype) = btf
            .member(target, &f.name)
            .ok_or_else(|| format!("`{}` has no member `{}`", btf.type_name(target), f.name))?;
        if f.arrow {
            fetch = format!("+{off}({fetch})");
        } else {
            // `.m` moves the outermost dereference.
            let (o, rest) = fetch[1..].split_once('(').ok_or("bad fetch")?;
            let o: u32 = o.parse().map_err(|_| "bad fetch")?;
            fetch = format!("+{}({rest}", o + off);
        }
        in_memory = true;
        ty = mtype;
        what.push_str(if f.arrow { "->" } else { "." });
        what.push_str(&f.name);
    }
    let suffix = match arg.ty.as_deref() {
        Some("string") => {
            let (_, t) = btf.resolve(ty).ok_or("no type")?;
            if t.kind != KIND_PTR || !btf.is_char(t.size_or_type) {
                return Err(format!(
                    "`{what}` is a `{}`, not a char pointer",
                    btf.type_name(ty)
                ));
            }
            fetch = format!("+0({fetch})");
            Some("string".to_string())
        }
        Some(s) if s.len() > 1 => Some(s.to_string()),
        cast => {
            let bits = btf.size(ty).map(|b| (b * 8).min(64));
            bits.map(|bits| {
                let signed = btf
                    .resolve(ty)
                    .is_some_and(|(_, t)| t.kind == KIND_INT && t.signed);
                let prefix = cast.unwrap_or(if signed { "s" } else { "x" });
                format!("{prefix}{bits}")
            })
        }
    };
    Ok(TraceArg {
        name: arg.trace_name(),
        fetch,
        ty: suffix,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::perf::probe::spec;

    fn vmlinux() -> Option<Btf> {
        let p = Path::new("/sys/kernel/btf/vmlinux");
        if !crate::test_require::require(
            p.exists(),
            "no /sys/kernel/btf/vmlinux",
            "a kernel with CONFIG_DEBUG_INFO_BTF",
        ) {
            return None;
        }
        Some(Btf::open(p).expect("the running kernel's BTF parses"))
    }

    fn arg(text: &str) -> VarArg {
        match spec::parse(&format!("f {text}")).unwrap().args.remove(0) {
            spec::Arg::Var(v) => v,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn vfs_read_prototype_from_the_running_kernel() {
        let Some(btf) = vmlinux() else { return };
        let params = btf.function_params("vfs_read").expect("vfs_read is in BTF");
        let described: Vec<String> = params
            .iter()
            .map(|(n, t)| format!("{} {n}", btf.type_name(*t)))
            .collect();
        // include/linux/fs.h: ssize_t vfs_read(struct file *, char __user *, size_t, loff_t *);
        assert_eq!(
            described,
            [
                "struct file * file",
                "char * buf",
                "size_t count",
                "loff_t * pos"
            ]
        );
        let t = translate_arg(&btf, "vfs_read", &arg("count")).unwrap();
        assert_eq!(t.to_string(), "count=%dx:x64");
        let t = translate_arg(&btf, "vfs_read", &arg("buf:string")).unwrap();
        assert_eq!(t.to_string(), "buf_string=+0(%si):string");
    }

    #[test]
    fn members_through_pointers() {
        let Some(btf) = vmlinux() else { return };
        // struct file -> f_inode -> i_ino: offsets from BTF itself, checked against a second lookup path.
        let params = btf.function_params("vfs_read").unwrap();
        let (file_off, inode_ty) = btf
            .member(btf.resolve(params[0].1).unwrap().1.size_or_type, "f_inode")
            .unwrap();
        let (ino_off, ino_ty) = btf
            .member(btf.resolve(inode_ty).unwrap().1.size_or_type, "i_ino")
            .unwrap();
        assert_eq!(btf.size(ino_ty), Some(8));
        let t = translate_arg(&btf, "vfs_read", &arg("ino=file->f_inode->i_ino")).unwrap();
        assert_eq!(
            t.to_string(),
            format!("ino=+{ino_off}(+{file_off}(%di)):x64")
        );
        let t = translate_arg(&btf, "vfs_read", &arg("file->f_flags")).unwrap();
        let (flags_off, _) = btf
            .member(btf.resolve(params[0].1).unwrap().1.size_or_type, "f_flags")
            .unwrap();
        assert_eq!(t.to_string(), format!("f_flags=+{flags_off}(%di):x32"));
        // `pos` is a loff_t* (long long): its target is signed.
        let t = translate_arg(&btf, "vfs_read", &arg("p=pos")).unwrap();
        assert_eq!(t.to_string(), "p=%cx:x64");
    }

    #[test]
    fn refusals_name_the_reason() {
        let Some(btf) = vmlinux() else { return };
        let e = translate_arg(&btf, "vfs_read", &arg("len")).unwrap_err();
        assert_eq!(
            e,
            "`len` is not a parameter of `vfs_read` (its parameters: file, buf, count, pos); BTF has no local variables, give -k VMLINUX for those"
        );
        let e = translate_arg(&btf, "vfs_read", &arg("count->x")).unwrap_err();
        assert_eq!(e, "`count` is a `size_t`, not a pointer");
        let e = translate_arg(&btf, "no_such_function_here", &arg("x")).unwrap_err();
        assert_eq!(
            e,
            "`no_such_function_here` has no function prototype in BTF"
        );
    }

    #[test]
    fn not_btf() {
        assert!(Btf::parse(b"\x7fELF....").is_err());
        assert!(Btf::parse(&[0x9f, 0xeb, 1, 0]).is_err());
    }
}
