//! The layout of ECMA-335's metadata tables (Partition II, §22): each table's columns,
//! and from the row counts and heap sizes of one module, each column's width and offset.

/// A column's kind; its width depends on the module (heap sizes, row counts).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Col {
    U8,
    U16,
    U32,
    Str,
    Guid,
    Blob,
    /// An index into one table.
    Table(u8),
    /// A coded index (§II.24.2.6).
    Coded(Coded),
}

/// The coded-index kinds: which tables a tag selects (`None` for tags no table uses).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Coded {
    TypeDefOrRef,
    HasConstant,
    HasCustomAttribute,
    HasFieldMarshal,
    HasDeclSecurity,
    MemberRefParent,
    HasSemantics,
    MethodDefOrRef,
    MemberForwarded,
    Implementation,
    CustomAttributeType,
    ResolutionScope,
    TypeOrMethodDef,
}

pub(crate) const MODULE: u8 = 0x00;
pub(crate) const TYPE_REF: u8 = 0x01;
pub(crate) const TYPE_DEF: u8 = 0x02;
pub(crate) const FIELD: u8 = 0x04;
pub(crate) const METHOD_DEF: u8 = 0x06;
pub(crate) const PARAM: u8 = 0x08;
pub(crate) const INTERFACE_IMPL: u8 = 0x09;
pub(crate) const MEMBER_REF: u8 = 0x0A;
pub(crate) const CONSTANT: u8 = 0x0B;
pub(crate) const CUSTOM_ATTRIBUTE: u8 = 0x0C;
pub(crate) const DECL_SECURITY: u8 = 0x0E;
pub(crate) const STANDALONE_SIG: u8 = 0x11;
pub(crate) const EVENT: u8 = 0x14;
pub(crate) const PROPERTY: u8 = 0x17;
pub(crate) const MODULE_REF: u8 = 0x1A;
pub(crate) const TYPE_SPEC: u8 = 0x1B;
pub(crate) const ASSEMBLY: u8 = 0x20;
pub(crate) const ASSEMBLY_REF: u8 = 0x23;
pub(crate) const FILE: u8 = 0x26;
pub(crate) const EXPORTED_TYPE: u8 = 0x27;
pub(crate) const MANIFEST_RESOURCE: u8 = 0x28;
pub(crate) const NESTED_CLASS: u8 = 0x29;
pub(crate) const GENERIC_PARAM: u8 = 0x2A;
pub(crate) const METHOD_SPEC: u8 = 0x2B;
pub(crate) const GENERIC_PARAM_CONSTRAINT: u8 = 0x2C;

/// Tables 0x00..=0x2C; a module with any other table is not read here.
pub(crate) const TABLES: usize = 0x2D;

impl Coded {
    /// The tables its tags select, in tag order.
    pub(crate) fn tables(self) -> &'static [Option<u8>] {
        use Coded::*;
        match self {
            TypeDefOrRef => &[Some(TYPE_DEF), Some(TYPE_REF), Some(TYPE_SPEC)],
            HasConstant => &[Some(FIELD), Some(PARAM), Some(PROPERTY)],
            HasCustomAttribute => &[
                Some(METHOD_DEF),
                Some(FIELD),
                Some(TYPE_REF),
                Some(TYPE_DEF),
                Some(PARAM),
                Some(INTERFACE_IMPL),
                Some(MEMBER_REF),
                Some(MODULE),
                Some(DECL_SECURITY),
                Some(PROPERTY),
                Some(EVENT),
                Some(STANDALONE_SIG),
                Some(MODULE_REF),
                Some(TYPE_SPEC),
                Some(ASSEMBLY),
                Some(ASSEMBLY_REF),
                Some(FILE),
                Some(EXPORTED_TYPE),
                Some(MANIFEST_RESOURCE),
                Some(GENERIC_PARAM),
                Some(GENERIC_PARAM_CONSTRAINT),
                Some(METHOD_SPEC),
            ],
            HasFieldMarshal => &[Some(FIELD), Some(PARAM)],
            HasDeclSecurity => &[Some(TYPE_DEF), Some(METHOD_DEF), Some(ASSEMBLY)],
            MemberRefParent => &[
                Some(TYPE_DEF),
                Some(TYPE_REF),
                Some(MODULE_REF),
                Some(METHOD_DEF),
                Some(TYPE_SPEC),
            ],
            HasSemantics => &[Some(EVENT), Some(PROPERTY)],
            MethodDefOrRef => &[Some(METHOD_DEF), Some(MEMBER_REF)],
            MemberForwarded => &[Some(FIELD), Some(METHOD_DEF)],
            Implementation => &[Some(FILE), Some(ASSEMBLY_REF), Some(EXPORTED_TYPE)],
            CustomAttributeType => &[None, None, Some(METHOD_DEF), Some(MEMBER_REF), None],
            ResolutionScope => &[
                Some(MODULE),
                Some(MODULE_REF),
                Some(ASSEMBLY_REF),
                Some(TYPE_REF),
            ],
            TypeOrMethodDef => &[Some(TYPE_DEF), Some(METHOD_DEF)],
        }
    }

    /// Bits of the tag: enough for the number of tags.
    pub(crate) fn tag_bits(self) -> u32 {
        let n = self.tables().len() as u32;
        u32::BITS - (n - 1).leading_zeros()
    }
}

/// The columns of table `t` (§II.22), or `None` for a table number this reader does not
/// know (0x2D and up, the portable PDB tables, which assemblies do not hold).
pub(crate) fn columns(t: u8) -> Option<&'static [Col]> {
    use self::Coded as C;
    use Col::*;
    Some(match t {
        0x00 => &[U16, Str, Guid, Guid, Guid],
        0x01 => &[Coded(C::ResolutionScope), Str, Str],
        0x02 => &[
            U32,
            Str,
            Str,
            Coded(C::TypeDefOrRef),
            Table(FIELD),
            Table(METHOD_DEF),
        ],
        0x03 => &[Table(FIELD)],
        0x04 => &[U16, Str, Blob],
        0x05 => &[Table(METHOD_DEF)],
        0x06 => &[U32, U16, U16, Str, Blob, Table(PARAM)],
        0x07 => &[Table(PARAM)],
        0x08 => &[U16, U16, Str],
        0x09 => &[Table(TYPE_DEF), Coded(C::TypeDefOrRef)],
        0x0A => &[Coded(C::MemberRefParent), Str, Blob],
        0x0B => &[U8, U8, Coded(C::HasConstant), Blob],
        0x0C => &[
            Coded(C::HasCustomAttribute),
            Coded(C::CustomAttributeType),
            Blob,
        ],
        0x0D => &[Coded(C::HasFieldMarshal), Blob],
        0x0E => &[U16, Coded(C::HasDeclSecurity), Blob],
        0x0F => &[U16, U32, Table(TYPE_DEF)],
        0x10 => &[U32, Table(FIELD)],
        0x11 => &[Blob],
        0x12 => &[Table(TYPE_DEF), Table(EVENT)],
        0x13 => &[Table(EVENT)],
        0x14 => &[U16, Str, Coded(C::TypeDefOrRef)],
        0x15 => &[Table(TYPE_DEF), Table(PROPERTY)],
        0x16 => &[Table(PROPERTY)],
        0x17 => &[U16, Str, Blob],
        0x18 => &[U16, Table(METHOD_DEF), Coded(C::HasSemantics)],
        0x19 => &[
            Table(TYPE_DEF),
            Coded(C::MethodDefOrRef),
            Coded(C::MethodDefOrRef),
        ],
        0x1A => &[Str],
        0x1B => &[Blob],
        0x1C => &[U16, Coded(C::MemberForwarded), Str, Table(MODULE_REF)],
        0x1D => &[U32, Table(FIELD)],
        0x1E => &[U32, U32],
        0x1F => &[U32],
        0x20 => &[U32, U16, U16, U16, U16, U32, Blob, Str, Str],
        0x21 => &[U32],
        0x22 => &[U32, U32, U32],
        0x23 => &[U16, U16, U16, U16, U32, Blob, Str, Str, Blob],
        0x24 => &[U32, Table(ASSEMBLY_REF)],
        0x25 => &[U32, U32, U32, Table(ASSEMBLY_REF)],
        0x26 => &[U32, Str, Blob],
        0x27 => &[U32, U32, Str, Str, Coded(C::Implementation)],
        0x28 => &[U32, U32, Str, Coded(C::Implementation)],
        0x29 => &[Table(TYPE_DEF), Table(TYPE_DEF)],
        0x2A => &[U16, U16, Coded(C::TypeOrMethodDef), Str],
        0x2B => &[Coded(C::MethodDefOrRef), Blob],
        0x2C => &[Table(GENERIC_PARAM), Coded(C::TypeDefOrRef)],
        _ => return None,
    })
}

/// Column widths of one module: heap index sizes and row counts decide them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Widths {
    pub(crate) strings: usize,
    pub(crate) guids: usize,
    pub(crate) blobs: usize,
    pub(crate) rows: [u32; TABLES],
}

impl Widths {
    pub(crate) fn of(&self, col: Col) -> usize {
        let small = |max_rows: u32, bits: u32| {
            if max_rows < (1u32 << (16 - bits)) {
                2
            } else {
                4
            }
        };
        match col {
            Col::U8 => 1,
            Col::U16 => 2,
            Col::U32 => 4,
            Col::Str => self.strings,
            Col::Guid => self.guids,
            Col::Blob => self.blobs,
            Col::Table(t) => small(self.rows[t as usize], 0),
            Col::Coded(c) => {
                let max = c
                    .tables()
                    .iter()
                    .flatten()
                    .map(|&t| self.rows[t as usize])
                    .max()
                    .unwrap_or(0);
                small(max, c.tag_bits())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_bits_follow_the_number_of_tags() {
        assert_eq!(Coded::TypeDefOrRef.tag_bits(), 2);
        assert_eq!(Coded::HasCustomAttribute.tag_bits(), 5);
        assert_eq!(Coded::MemberRefParent.tag_bits(), 3);
        assert_eq!(Coded::CustomAttributeType.tag_bits(), 3);
        assert_eq!(Coded::HasSemantics.tag_bits(), 1);
        assert_eq!(Coded::ResolutionScope.tag_bits(), 2);
    }

    #[test]
    fn wide_indexes_start_where_the_tag_leaves_too_few_bits() {
        let mut w = Widths {
            strings: 2,
            guids: 2,
            blobs: 2,
            rows: [0; TABLES],
        };
        w.rows[TYPE_REF as usize] = (1 << 14) - 1;
        assert_eq!(w.of(Col::Coded(Coded::TypeDefOrRef)), 2);
        w.rows[TYPE_REF as usize] = 1 << 14;
        assert_eq!(w.of(Col::Coded(Coded::TypeDefOrRef)), 4);
        assert_eq!(w.of(Col::Table(TYPE_REF)), 2);
        w.rows[TYPE_REF as usize] = 1 << 16;
        assert_eq!(w.of(Col::Table(TYPE_REF)), 4);
    }

    #[test]
    fn every_table_up_to_0x2c_has_columns() {
        for t in 0..TABLES as u8 {
            assert!(columns(t).is_some(), "table {t:#x}");
        }
        assert!(columns(0x2D).is_none());
    }
}
