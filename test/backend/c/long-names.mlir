// RUN: usmp-opt %s -p usmp-import-memref,usmp -t 'c{prefix=net}' | filecheck %s
// RUN: usmp-opt %s -p usmp-import-memref,usmp -t 'c-header{prefix=net}' | filecheck %s --check-prefix=HEADER
// RUN: %if gcc %{ rm -rf %t && mkdir -p %t && usmp-opt %s -p usmp-import-memref,usmp -t 'c-header{prefix=net}' -o %t/net.h && usmp-opt %s -p usmp-import-memref,usmp -t 'c{prefix=net}' -o %t/net.c && gcc -std=c11 -Wall -Wextra -Werror -Wpedantic -Wcast-align=strict -Wconversion -Wshadow -Wdouble-promotion -c %t/net.c -o %t/net.o %}
// Hand-written names of any length give C identifiers of at most 63 characters (C11's
// significant initial characters): a longer name keeps its start and gets `_` + 8 hex digits
// of its SHA-256, so names that differ only beyond the cut stay distinct; struct fields stop
// at 32 characters so that `<P>_OUTPUT_<FIELD>_ZERO_POINT` fits too. The header describes
// what the program says: `usmp.quantization` gives `_SCALE` / `_ZERO_POINT`, no attribute
// gives none.

func.func @an_operator_function_whose_name_is_longer_than_sixty_three_characters_in_all(%x: memref<4xi8>, %y: memref<4xi8>) {
  %c0 = arith.constant 0 : index
  %v = memref.load %x[%c0] : memref<4xi8>
  memref.store %v, %y[%c0] : memref<4xi8>
  func.return
}
func.func @main(%the_input_tensor_of_a_model_written_by_hand_with_a_very_long_name: memref<4xi8> {usmp.io = "input", usmp.quantization = {scale = 5.000000e-01 : f64, zero_point = -3 : i64}}, %the_output_tensor_of_a_model_written_by_hand_with_a_very_long_name: memref<4xi8> {usmp.io = "output"}) {
  %an_intermediate_tensor_whose_name_is_shared_by_two_buffers_up_to_here_a = memref.alloc() : memref<4xi8>
  %an_intermediate_tensor_whose_name_is_shared_by_two_buffers_up_to_here_b = memref.alloc() : memref<4xi8>
  func.call @an_operator_function_whose_name_is_longer_than_sixty_three_characters_in_all(%the_input_tensor_of_a_model_written_by_hand_with_a_very_long_name, %an_intermediate_tensor_whose_name_is_shared_by_two_buffers_up_to_here_a) : (memref<4xi8>, memref<4xi8>) -> ()
  func.call @an_operator_function_whose_name_is_longer_than_sixty_three_characters_in_all(%an_intermediate_tensor_whose_name_is_shared_by_two_buffers_up_to_here_a, %an_intermediate_tensor_whose_name_is_shared_by_two_buffers_up_to_here_b) : (memref<4xi8>, memref<4xi8>) -> ()
  func.call @an_operator_function_whose_name_is_longer_than_sixty_three_characters_in_all(%an_intermediate_tensor_whose_name_is_shared_by_two_buffers_up_to_here_b, %the_output_tensor_of_a_model_written_by_hand_with_a_very_long_name) : (memref<4xi8>, memref<4xi8>) -> ()
  func.return
}

// CHECK:      static void an_operator_function_whose_name_is_longer_than_sixty_t_f35b2bba(const int8_t* x, int8_t* y);
// CHECK:      int32_t net_run(struct net_inputs* inputs, struct net_outputs* outputs) {
// CHECK-NEXT:   const int8_t* the_input_tensor_of_a_m_e3003657 = (const int8_t*)inputs->the_input_tensor_of_a_m_e3003657;
// CHECK-NEXT:   int8_t* the_output_tensor_of_a_5308ac1f = (int8_t*)outputs->the_output_tensor_of_a_5308ac1f;
// CHECK:        int8_t* an_intermediate_tensor_whose_name_is_shared_by_two_buf_7b69883d = (int8_t*)global_workspace;
// CHECK:        int8_t* an_intermediate_tensor_whose_name_is_shared_by_two_buf_c59abfc4 = (int8_t*)global_workspace;
// CHECK-NEXT:   an_operator_function_whose_name_is_longer_than_sixty_t_f35b2bba(the_input_tensor_of_a_m_e3003657, an_intermediate_tensor_whose_name_is_shared_by_two_buf_7b69883d);

// HEADER:      #define NET_INPUTS_COUNT 1
// HEADER-NEXT: #define NET_OUTPUTS_COUNT 1
// HEADER:      #define NET_WORKSPACE_SIZE 4
// HEADER-NEXT: #define NET_CONSTANTS_SIZE 0
// HEADER-NEXT: /* bytes of all state pools: the model's state, kept from one run to the next */
// HEADER-NEXT: #define NET_STATE_SIZE 0
// HEADER-EMPTY:
// HEADER-NEXT: /* input 'the_input_tensor_of_a_m_e3003657' */
// HEADER-NEXT: #define NET_INPUT_THE_INPUT_TENSOR_OF_A_M_E3003657_SIZE 4
// HEADER-NEXT: #define NET_INPUT_THE_INPUT_TENSOR_OF_A_M_E3003657_ELEMENTS 4
// HEADER-NEXT: #define NET_INPUT_THE_INPUT_TENSOR_OF_A_M_E3003657_RANK 1
// HEADER-NEXT: #define NET_INPUT_THE_INPUT_TENSOR_OF_A_M_E3003657_SHAPE {4}
// HEADER-NEXT: #define NET_INPUT_THE_INPUT_TENSOR_OF_A_M_E3003657_DTYPE int8_t
// HEADER-NEXT: #define NET_INPUT_THE_INPUT_TENSOR_OF_A_M_E3003657_SCALE 0.5f
// HEADER-NEXT: #define NET_INPUT_THE_INPUT_TENSOR_OF_A_M_E3003657_ZERO_POINT (-3)
// HEADER-EMPTY:
// HEADER-NEXT: /* output 'the_output_tensor_of_a_5308ac1f' */
// HEADER-NEXT: #define NET_OUTPUT_THE_OUTPUT_TENSOR_OF_A_5308AC1F_SIZE 4
// HEADER:      #define NET_OUTPUT_THE_OUTPUT_TENSOR_OF_A_5308AC1F_DTYPE int8_t
// HEADER-NOT:  _SCALE
// HEADER-NOT:  _ZERO_POINT
// HEADER:      struct net_inputs {
// HEADER-NEXT:   void* the_input_tensor_of_a_m_e3003657;
