def get_assert(output, context):
    return context["vars"]["city"].lower() in output.lower()
