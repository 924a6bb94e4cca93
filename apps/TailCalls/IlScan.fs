/// Counts `tail.` prefixes in a method's IL, so the app can show that the compiler really
/// emitted them (a self-recursive F# tail call becomes a loop instead, with no prefix).
module TailCalls.IlScan

open System.Reflection
open System.Reflection.Emit

let private opcodes =
    let oneByte = Array.create 256 None
    let twoByte = Array.create 256 None
    for field in typeof<OpCodes>.GetFields(BindingFlags.Public ||| BindingFlags.Static) do
        let op = field.GetValue(null) :?> OpCode
        let low = int (uint16 op.Value &&& 0xFFus)
        if op.Size = 1 then oneByte[low] <- Some op else twoByte[low] <- Some op
    oneByte, twoByte

let private operandSize (op: OpCode) (il: byte[]) (at: int) =
    match op.OperandType with
    | OperandType.InlineNone -> 0
    | OperandType.ShortInlineBrTarget
    | OperandType.ShortInlineI
    | OperandType.ShortInlineVar -> 1
    | OperandType.InlineVar -> 2
    | OperandType.InlineI8
    | OperandType.InlineR -> 8
    | OperandType.InlineSwitch -> 4 + 4 * System.BitConverter.ToInt32(il, at)
    | _ -> 4

/// How many `tail.` prefixes the method body has.
let tailPrefixes (m: MethodInfo) =
    let oneByte, twoByte = opcodes
    let il = m.GetMethodBody().GetILAsByteArray()
    let mutable pos = 0
    let mutable count = 0
    while pos < il.Length do
        let op =
            if il[pos] = 0xFEuy then
                pos <- pos + 2
                twoByte[int il[pos - 1]]
            else
                pos <- pos + 1
                oneByte[int il[pos - 1]]
        match op with
        | Some op ->
            if op = OpCodes.Tailcall then count <- count + 1
            pos <- pos + operandSize op il pos
        | None -> failwithf "unknown IL opcode at offset %d of %s" pos m.Name
    count
