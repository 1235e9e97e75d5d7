"""The lowering table's entries by family (pointwise, shapes, reductions, library): each module
writes its ops into `codegen.lowering.TABLE` when imported, and codegen.lowering imports them
in that order, so importing the table fills it."""
